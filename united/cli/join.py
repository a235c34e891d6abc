"""``united join NAME --member-context CTX``: make a cluster a member of the host in one command
(:mod:`united.multicluster.join` does the work; this is its command line).

Exit codes as everywhere: 0 joined and ``Ready`` (or ``--wait 0``); 2 bad input or a step the
clusters refused (``field: message``, the field being the flag to look at); 1 joined but not
``Ready`` within ``--wait`` (the ``Cluster``'s reason says why).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from united.api.field import FieldError, ManifestError
from united.log import configure_logging

if TYPE_CHECKING:
    from united.multicluster.join import Membership, Side

HOME_KUBECONFIG = "~/.kube/config"
FLAGS: dict[Side, str] = {"host": "--host-context", "member": "--member-context"}


def add_parser(sub: Any) -> None:
    j = sub.add_parser("join", help="make a cluster a member of this host: its role, a kubeconfig Secret, a Cluster")
    j.add_argument("name", metavar="NAME", help="the Cluster's name (what subsets[].cluster says)")
    j.add_argument("--member-context", required=True, metavar="CTX", help="the member's context in --member-kubeconfig")
    j.add_argument("--member-kubeconfig", metavar="FILE", help="default: $KUBECONFIG (its first file), ~/.kube/config")
    j.add_argument(
        "--server", metavar="URL", help="the member's API server as the host's controller reaches it "
        "(default: the member context's server)",
    )  # fmt: skip
    j.add_argument("--host-context", metavar="CTX", help="the host's context (default: the current one)")
    j.add_argument("--host-kubeconfig", metavar="FILE", help="default: $KUBECONFIG (its first file), ~/.kube/config")
    j.add_argument(
        "--secret-namespace",
        metavar="NS",
        help="the host's namespace for the kubeconfig Secret (default: united-clusters, as cluster-credentials.yaml)",
    )
    admitted = j.add_mutually_exclusive_group()
    admitted.add_argument(
        "--namespaces", metavar="NS[,NS...]",
        help="the host namespaces whose UnitedDeployments may place subsets in this member (Cluster spec.namespaces)",
    )  # fmt: skip
    admitted.add_argument(
        "--all-namespaces", action="store_true",
        help="every host namespace may place subsets in this member (Cluster spec.allNamespaces: true)",
    )  # fmt: skip
    j.add_argument(
        "--create-namespaces", action="store_true",
        help="let the controller create a missing namespace in the member (manifests/member's namespaces rule, "
        "Cluster spec.createNamespaces: true); default: create them yourself (manifests/member-no-namespaces)",
    )  # fmt: skip
    j.add_argument("--no-namespaces", action="store_true", help=argparse.SUPPRESS)  # the default now
    j.add_argument(
        "--token-days", type=int, default=None, metavar="DAYS",
        help="the member token's lifetime (default: 365); run united join again before it ends",
    )  # fmt: skip
    j.add_argument("--wait", type=float, default=60.0, metavar="SECONDS", help="wait this long for Ready (0: not)")
    j.add_argument(
        "--dry-run", action="store_true", help="print the host's Secret (token redacted) and Cluster; change nothing"
    )
    j.set_defaults(func=command)


def default_kubeconfig() -> str:
    """What kubectl reads without ``--kubeconfig``: ``$KUBECONFIG``'s first file, else ~/.kube/config."""
    return os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or os.path.expanduser(HOME_KUBECONFIG)


def command(args: argparse.Namespace) -> int:
    from united.multicluster import join

    namespace = args.secret_namespace or join.SECRET_NAMESPACE
    admitted = [n.strip() for n in args.namespaces.split(",")] if args.namespaces is not None else None
    token_days = join.TOKEN_DAYS if args.token_days is None else args.token_days
    errors = join.problems(
        args.name, secret_namespace=namespace, server=args.server, wait=args.wait,
        namespaces=admitted, token_days=token_days,
    )  # fmt: skip
    if admitted is None and not args.all_namespaces:
        detail = "name the host namespaces that may place subsets in this member, or pass --all-namespaces"
        errors.append(FieldError("--namespaces", f"Required value: {detail}"))
    if errors:
        raise ManifestError(errors)
    member_file = args.member_kubeconfig or default_kubeconfig()
    host_file = args.host_kubeconfig or default_kubeconfig()
    with _reported("member"):
        endpoint = join.endpoint(member_file, context=args.member_context, server=args.server)
    if args.server is None and (problem := join.server_problem(endpoint.server)):
        raise ManifestError([FieldError("--server", f"the member context's server {endpoint.server!r} {problem}")])
    membership = join.Membership(
        args.name,
        endpoint,
        secret_namespace=namespace,
        create_namespaces=args.create_namespaces and not args.no_namespaces,
        namespaces=tuple(admitted or ()),
        all_namespaces=args.all_namespaces,
        token_days=token_days,
    )
    if args.dry_run:
        sys.stdout.write(join.dry_run(membership))
        return 0
    configure_logging(level="ERROR", log_format="console")
    cluster = asyncio.run(_join(membership, member_file, args.member_context, host_file, args.host_context, args.wait))
    print(join.ready_line(args.name, cluster))
    return 0 if join.is_ready(cluster) or args.wait == 0 else 1


async def _join(
    membership: Membership, member_file: str, member_context: str, host_file: str, host_context: str | None, wait: float
) -> dict[str, Any]:
    from united.kube.client import KubeClient
    from united.multicluster import join

    with _reported("host"):
        host = await KubeClient.from_kubeconfig(host_file, context=host_context, user_agent="united-join")
    async with host:
        with _reported("member"):
            member = await KubeClient.from_kubeconfig(member_file, context=member_context, user_agent="united-join")
        async with member:
            with _reported("member"):
                return await join.join(host, member, membership, wait=wait, say=_say)


def _say(message: str) -> None:
    print(f"note: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _reported(side: Side) -> Iterator[None]:
    """A :class:`ConfigError` (on ``side``) or a :class:`JoinError` as ``FLAG: message``."""
    from united.kube.errors import ConfigError
    from united.multicluster.join import JoinError

    try:
        yield
    except ConfigError as exc:
        raise ManifestError([FieldError(FLAGS[side], str(exc))]) from None
    except JoinError as exc:
        raise ManifestError([FieldError(FLAGS[exc.side], exc.message)]) from None
