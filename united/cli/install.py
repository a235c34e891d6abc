"""``united install``: the CRDs and the controller applied to a cluster, or printed."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import yaml

from united import __version__, data
from united.api import crdrules
from united.api.field import FieldError, ManifestError
from united.api.groups import GROUP, KRUISE_GROUP, KRUISE_UD_CRD
from united.cli.output import EXIT_INVALID, EXIT_OK
from united.log import configure_logging


def register(sub: Any) -> None:
    i = sub.add_parser("install", help=f"apply (or print) the CRD and the controller {__version__} for a cluster")
    i.add_argument(
        "--api-group",
        default=GROUP,
        choices=(GROUP, KRUISE_GROUP),
        help=f"the group to serve ({KRUISE_GROUP}: the compat CRD and RBAC, for clusters without OpenKruise)",
    )
    i.add_argument(
        "--kruise-v1beta1",
        action="store_true",
        help=f"with --api-group {KRUISE_GROUP}: serve UnitedDeployments as v1beta1 too (manifests of OpenKruise "
        "after its releases); each served version costs the API server on every UnitedDeployment write",
    )
    i.add_argument("--print", action="store_true", dest="print_only", help="print the manifests, apply nothing")
    i.add_argument(
        "--kube-version",
        metavar="V",
        help="with --print: the cluster's Kubernetes version; before 1.25 the CRDs are printed without their "
        "CEL validation rules (kubectl refuses them there). Applying asks the cluster",
    )
    i.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then $KUBECONFIG, ~/.kube/config)")
    i.set_defaults(func=_install)


def _install(args: argparse.Namespace) -> int:
    import asyncio

    from united.devcluster.installation import install
    from united.kube.discovery import release
    from united.kube.errors import ApiError, ConfigError

    docs = data.controller(args.api_group)
    if args.kruise_v1beta1:
        if args.api_group != KRUISE_GROUP:
            raise ManifestError([FieldError("--kruise-v1beta1", f"needs --api-group {KRUISE_GROUP}")])
        docs = data.serving(docs, KRUISE_UD_CRD, "v1beta1")
    if args.print_only:
        if args.kube_version is not None:
            found = release({"gitVersion": args.kube_version})
            if found is None:
                raise ManifestError([FieldError("--kube-version", f"{args.kube_version!r} is not a version like 1.29")])
            docs = crdrules.for_server(docs, found)
        sys.stdout.write(yaml.safe_dump_all(docs, sort_keys=False))
        return EXIT_OK
    configure_logging(level="ERROR", log_format="console")
    try:
        asyncio.run(install(docs, kubeconfig=args.kubeconfig))
    except ConfigError as e:
        print(e, file=sys.stderr)
        return EXIT_INVALID
    except ApiError as e:
        raise ManifestError([FieldError("install", f"cannot apply to the cluster: {e.__cause__ or e.message}")]) from e
    for doc in docs:
        print(f"{doc['kind']}/{doc['metadata']['name']} applied")
    return EXIT_OK
