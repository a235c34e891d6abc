"""``kubectl united``: the kubectl plugin (console script ``kubectl-united``).

The plugin is thin: :mod:`.command` parses flags and talks to the cluster through
:class:`~united.kube.client.KubeClient`, reached by kubectl's rules (:mod:`.connection`); what
it shows and decides is pure: :mod:`.summary` (the status table), :mod:`.rollout` (when
``rollout status`` is done, what ``pause``/``resume`` write) and :mod:`.rollback` (which
revision ``rollout undo`` restores).
"""
