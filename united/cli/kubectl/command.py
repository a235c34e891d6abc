"""The ``kubectl-united`` console script: flags, the cluster calls, and what is printed.

Exit codes follow kubectl: 0 success; 1 the cluster said no (``Error from server (NotFound): ...``),
could not be reached, or a rollout failed or timed out; 2 bad usage (``field: message``).
Connection flags (``--kubeconfig``, ``--context``, ``-n``, ``--request-timeout``) are accepted
before or after the subcommand, as kubectl accepts its global flags anywhere.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from united import __version__
from united.api.field import ManifestError, Path, invalid
from united.api.groups import GROUP, KRUISE_GROUP
from united.api.timestamp import format_time
from united.cli.kubectl import rollback, rollout, summary
from united.cli.kubectl.connection import connect, context_namespace, duration, kubeconfig_path
from united.cli.output import print_json, print_table
from united.kube.client import CONTROLLER_REVISIONS, KubeClient, PatchType, Resource
from united.kube.errors import ApiError, ConfigError, Conflict, Gone, TransientError
from united.log import configure_logging

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
_CONFLICT_ATTEMPTS = 5


class CommandError(Exception):
    """A one-line error for stderr, exit code 1."""


GROUPS = (GROUP, KRUISE_GROUP)
"""Both kinds are spoken to in ``v1alpha1`` in both groups (the version each stores or serves
as OpenKruise's releases do)."""


@dataclass(frozen=True, slots=True)
class Kind:
    kind: str
    plural: str
    aliases: tuple[str, ...]

    def resource(self, group: str) -> Resource:
        return Resource(group, "v1alpha1", self.plural, True, self.kind)


UNITED = Kind("UnitedDeployment", "uniteddeployments", ("uniteddeployment", "ud"))
SPREAD = Kind("WorkloadSpread", "workloadspreads", ("workloadspread", "ws"))


def target(text: str, *, group: str) -> tuple[Resource, str]:
    """``NAME`` (a UnitedDeployment) or kubectl's ``TYPE[.GROUP]/NAME`` → (resource, name)."""
    kind, slash, name = text.rpartition("/")
    if not slash:
        return UNITED.resource(group), text
    type_, dot, given_group = kind.partition(".")
    group = given_group if dot else group
    for candidate in (UNITED, SPREAD):
        if type_.lower() in (candidate.plural, *candidate.aliases) and group in GROUPS:
            if not name:
                break
            return candidate.resource(group), name
    known = "uniteddeployment/NAME, workloadspread/NAME (groups apps.united.io, apps.kruise.io)"
    raise ManifestError([invalid(Path("NAME"), text, f"must be NAME or one of {known}")])


def _namespace(args: argparse.Namespace) -> str:
    return str(args.namespace or context_namespace(kubeconfig_path(args.kubeconfig), args.context))


def _display(resource: Resource, name: str) -> str:
    return f"{resource.kind.lower()}.{resource.group}/{name}"


def _connection_flags(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """kubectl's connection flags; on subcommands they default to SUPPRESS so a flag given
    before the subcommand is not overwritten by the subcommand's default."""

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    parser.add_argument(
        "--kubeconfig", default=default(None), help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)"
    )
    parser.add_argument("--context", default=default(None), help="the kubeconfig context to use")
    parser.add_argument(
        "-n", "--namespace", default=default(None), help="namespace (default: the context's, else default)"
    )
    parser.add_argument(
        "--request-timeout", default=default(""), metavar="DURATION", help="per-request timeout, e.g. 30s (0: default)"
    )
    parser.add_argument(
        "--api-group",
        default=default(GROUP),
        choices=(GROUP, KRUISE_GROUP),
        help=f"the objects' API group (default {GROUP})",
    )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kubectl united", description="UnitedDeployment and WorkloadSpread status, plans and rollouts."
    )
    p.add_argument("--version", action="version", version=f"kubectl-united {__version__}")
    _connection_flags(p, suppress=False)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def leaf(
        parent: Any, name: str, func: Callable[[argparse.Namespace], int], help_text: str
    ) -> argparse.ArgumentParser:
        c: argparse.ArgumentParser = parent.add_parser(name, help=help_text, description=help_text)
        _connection_flags(c, suppress=True)
        c.set_defaults(func=func)
        return c

    plan = leaf(sub, "plan", _plan, "show how a manifest's replicas would be spread over its subsets, and why")
    plan.add_argument("-f", "--filename", required=True, metavar="FILE", help="manifest file, or - for stdin")
    plan.add_argument("--replicas", type=int, metavar="N", help="what-if: override spec.replicas")
    plan.add_argument("--state", metavar="STATE", help="YAML/JSON describing existing children per subset")
    plan.add_argument("-o", "--output", choices=("table", "json"), default="table")

    status = leaf(sub, "status", _status, "per-subset status of a UnitedDeployment (or workloadspread/NAME)")
    status.add_argument("name", metavar="NAME")
    status.add_argument("-o", "--output", choices=("text", "json"), default="text")

    rollouts = sub.add_parser(
        "rollout", help="watch, pause, resume, restart, undo or list the history of a UnitedDeployment's rollout"
    )
    verbs = rollouts.add_subparsers(dest="verb", required=True, metavar="VERB")
    watch = leaf(verbs, "status", _rollout_status, "wait until the rollout completes (exit 1 if it stalls)")
    watch.add_argument("--timeout", default="0s", metavar="DURATION", help="give up after this long (0s: never)")
    watch.add_argument(
        "-w",
        "--watch",
        type=_boolean,
        nargs="?",
        const=True,
        default=True,
        help="wait (default true; false: print once)",
    )
    for verb, func, help_text in (
        ("pause", _pause, "pause a Progressive rollout (spec.updateStrategy.progressive.paused)"),
        ("resume", _resume, "resume a paused rollout, and end the current wave's pause"),
        ("undo", _undo, "roll back to the previous (or a given) revision's template"),
        ("restart", _restart, "restart every pod: a new template annotation, rolled out under the strategy"),
        ("history", _history, "list the revisions with their change cause (or show one revision's template)"),
    ):
        c = leaf(verbs, verb, func, help_text)
        if verb == "undo":
            c.add_argument("--to-revision", type=int, default=0, metavar="N", help="the revision (default: previous)")
        if verb == "history":
            c.add_argument("--revision", type=int, default=0, metavar="N", help="show this revision's template")
    for c in (watch, *(verbs.choices[v] for v in ("pause", "resume", "undo", "restart", "history"))):
        c.add_argument("name", metavar="NAME")
    return p


def _boolean(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not true or false")


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    configure_logging(level="ERROR", log_format="console")  # the client's retries are not news to a user
    try:
        result: int = args.func(args)
        return result
    except ManifestError as e:
        for error in e.errors:
            print(error, file=sys.stderr)
        return EXIT_USAGE
    except (CommandError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAILURE
    except TransientError as e:
        if e.status:
            print(f"Error from server ({e.reason or e.status}): {e.body.get('message') or e.message}", file=sys.stderr)
        else:
            print(f"Unable to connect to the server: {e.message}", file=sys.stderr)
        return EXIT_FAILURE
    except ApiError as e:
        print(f"Error from server ({e.reason or e.status}): {e.body.get('message') or e.message}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


def _plan(args: argparse.Namespace) -> int:
    from united import cli

    extra = [*(["--replicas", str(args.replicas)] if args.replicas is not None else [])]
    extra += ["--state", args.state] if args.state else []
    return cli.main(["plan", args.filename, "-o", args.output, *extra])


def _on_cluster(args: argparse.Namespace, work: Callable[[KubeClient, str], Awaitable[int]]) -> int:
    namespace = _namespace(args)

    async def run() -> int:
        async with await connect(args) as client:
            return await work(client, namespace)

    return asyncio.run(run())


def _status(args: argparse.Namespace) -> int:
    resource, name = target(args.name, group=args.api_group)

    async def work(client: KubeClient, namespace: str) -> int:
        obj = await client.get(resource, name, namespace=namespace)
        shown = summary.spread(obj) if resource.kind == SPREAD.kind else summary.united(obj)
        if args.output == "json":
            print_json(shown)
            return EXIT_OK
        for line in summary.lines(shown):
            print(line)
        if shown["subsets"]:
            print()
            print_table(summary.rows(shown))
        return EXIT_OK

    return _on_cluster(args, work)


def _united(args: argparse.Namespace) -> tuple[Resource, str]:
    resource, name = target(args.name, group=args.api_group)
    if resource.kind != UNITED.kind:
        raise ManifestError([invalid(Path("NAME"), args.name, "rollouts are a UnitedDeployment's")])
    return resource, name


def _rollout_status(args: argparse.Namespace) -> int:
    resource, name = _united(args)
    timeout = duration(args.timeout, "--timeout")

    async def work(client: KubeClient, namespace: str) -> int:
        shown: list[str] = []

        def judge(obj: Mapping[str, Any]) -> rollout.Verdict:
            found = rollout.verdict(obj)
            if not shown or shown[-1] != found.message:
                shown.append(found.message)
                stream = sys.stderr if found.state is rollout.State.FAILED else sys.stdout
                print(f"error: {found.message}" if found.state is rollout.State.FAILED else found.message, file=stream)
            return found

        first = judge(await client.get(resource, name, namespace=namespace))
        if first.state is not rollout.State.WAITING or not args.watch:
            return EXIT_FAILURE if first.state is rollout.State.FAILED else EXIT_OK
        try:
            async with asyncio.timeout(timeout or None):
                return await _watch(client, resource, name, namespace, judge)
        except TimeoutError:
            print("error: timed out waiting for the condition", file=sys.stderr)
            return EXIT_FAILURE

    return _on_cluster(args, work)


async def _watch(
    client: KubeClient,
    resource: Resource,
    name: str,
    namespace: str,
    judge: Callable[[Mapping[str, Any]], rollout.Verdict],
) -> int:
    """Judge every change of the object until the verdict is final; a watch that ends or
    expires is resumed from a fresh read."""
    while True:
        obj = await client.get(resource, name, namespace=namespace)
        found = judge(obj)
        if found.state is not rollout.State.WAITING:
            return EXIT_FAILURE if found.state is rollout.State.FAILED else EXIT_OK
        version = str(obj["metadata"].get("resourceVersion", ""))
        fields = f"metadata.name={name}"
        try:
            async with client.watch(
                resource, namespace=namespace, resource_version=version, field_selector=fields, timeout_seconds=60
            ) as events:
                async for event in events:
                    if event.type == "DELETED":
                        raise CommandError(f"{_display(resource, name)} was deleted")
                    if event.type in ("ADDED", "MODIFIED"):
                        found = judge(event.object)
                        if found.state is not rollout.State.WAITING:
                            return EXIT_FAILURE if found.state is rollout.State.FAILED else EXIT_OK
        except (Gone, TransientError):
            await asyncio.sleep(1)


async def _patch_fresh(
    client: KubeClient,
    resource: Resource,
    name: str,
    namespace: str,
    build: Callable[[Mapping[str, Any]], Any],
    *,
    patch_type: PatchType = PatchType.MERGE,
) -> dict[str, Any] | None:
    """Read, build a patch from what was read (None: nothing to write), write it guarded by that
    resourceVersion; read again when someone else wrote in between."""
    for attempt in range(_CONFLICT_ATTEMPTS):
        obj = await client.get(resource, name, namespace=namespace)
        try:
            patch = build(obj)
        except rollout.RolloutError as e:
            text = str(e)
            raise CommandError(text if ":" in text else f'{resource.plural}.{resource.group} "{name}" {text}') from None
        except rollback.RevisionError as e:
            raise CommandError(str(e)) from None
        if patch is None:
            return None
        try:
            return await client.patch(resource, name, patch, patch_type=patch_type, namespace=namespace)
        except Conflict:
            if attempt + 1 == _CONFLICT_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _pause(args: argparse.Namespace) -> int:
    return _pause_or_resume(args, rollout.pause_patch, paused=True)


def _resume(args: argparse.Namespace) -> int:
    return _pause_or_resume(args, rollout.resume_patch, paused=False)


def _pause_or_resume(
    args: argparse.Namespace, build: Callable[[Mapping[str, Any]], dict[str, Any]], *, paused: bool
) -> int:
    resource, name = _united(args)

    async def work(client: KubeClient, namespace: str) -> int:
        written = await _patch_fresh(client, resource, name, namespace, build)
        if written is None or rollout.paused(written) != paused:
            raise CommandError(
                "the API server dropped spec.updateStrategy.progressive.paused: its UnitedDeployment CRD "
                "predates progressive rollouts; install this version's CRD (united install)"
            )
        print(f"{_display(resource, name)} {'paused' if paused else 'resumed'}")
        return EXIT_OK

    return _on_cluster(args, work)


def _undo(args: argparse.Namespace) -> int:
    resource, name = _united(args)
    if args.to_revision < 0:
        raise ManifestError([invalid(Path("--to-revision"), args.to_revision, "must be 0 (previous) or more")])

    async def work(client: KubeClient, namespace: str) -> int:
        revisions = (await client.list(CONTROLLER_REVISIONS, namespace=namespace)).items
        restored: list[int] = []

        def build(obj: Mapping[str, Any]) -> list[dict[str, Any]] | None:
            found = rollback.undo_patch(obj, revisions, to_revision=args.to_revision)
            if found is None:
                return None
            restored.append(found[1])
            return found[0]

        if await _patch_fresh(client, resource, name, namespace, build, patch_type=PatchType.JSON) is None:
            print(
                f"{_display(resource, name)} skipped rollback "
                f"(current template already matches revision {args.to_revision})"
            )
        else:
            print(f"{_display(resource, name)} rolled back to revision {restored[-1]}")
        return EXIT_OK

    return _on_cluster(args, work)


def _restart(args: argparse.Namespace) -> int:
    resource, name = _united(args)

    async def work(client: KubeClient, namespace: str) -> int:
        now = format_time(time.time())
        await _patch_fresh(client, resource, name, namespace, lambda obj: rollout.restart_patch(obj, now=now))
        print(f"{_display(resource, name)} restarted")
        return EXIT_OK

    return _on_cluster(args, work)


def _history(args: argparse.Namespace) -> int:
    resource, name = _united(args)
    if args.revision < 0:
        raise ManifestError([invalid(Path("--revision"), args.revision, "must be 0 (all) or more")])

    async def work(client: KubeClient, namespace: str) -> int:
        obj = await client.get(resource, name, namespace=namespace)
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        revisions = (await client.list(CONTROLLER_REVISIONS, namespace=namespace)).items
        if args.revision:
            try:
                template = rollback.revision_template(revisions, uid, args.revision)
            except rollback.RevisionError as e:
                raise CommandError(str(e)) from None
            print(f"{_display(resource, name)} with revision #{args.revision}")
            print(yaml.safe_dump({"template": template}, sort_keys=False), end="")
            return EXIT_OK
        print(_display(resource, name))
        print_table(
            [("REVISION", "CHANGE-CAUSE"), *((str(n), cause) for n, cause in rollback.history_rows(revisions, uid))]
        )
        return EXIT_OK

    return _on_cluster(args, work)


__all__ = ["main", "parser"]
