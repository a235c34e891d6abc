"""``kubectl united``: the kubectl plugin (console script ``kubectl-united``).

The plugin is thin: :mod:`.command` parses flags and talks to the cluster through
:class:`~united.kube.client.KubeClient`; what it shows and decides is pure and lives in
:mod:`.summary` (the status table), :mod:`.verdict` (when ``rollout status`` is done) and
:mod:`.rollback` (which revision ``rollout undo`` restores).
"""
