"""``python -m united.devcluster provision|start [--kube-version V]``.

``provision`` builds (or confirms) the cached binaries; CI runs it before the tests
so a build failure is reported as such, with the build log's tail. ``start`` brings
up a bare control plane, prints its kubeconfig and waits for Ctrl-C. The version is
``--kube-version`` (a release, ``newest`` or ``default``), else ``UNITED_KUBE_VERSION``
(as the e2e fixtures read it), else the default, 1.20.2.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

from united.devcluster import versions
from united.devcluster.build import Layout, ProvisionError, is_provisioned, provision, tail
from united.devcluster.cluster import ClusterError, LocalCluster, describe, interrupts_deferred


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m united.devcluster", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    prov = commands.add_parser("provision", help="build or confirm the cached binaries")
    prov.add_argument("--force", action="store_true", help="rebuild even if the cache is complete")
    prov.add_argument("--check", action="store_true", help="only report whether the cache is complete (exit 1 if not)")
    start = commands.add_parser("start", help="start a control plane and wait for Ctrl-C")
    for command in (prov, start):
        command.add_argument(
            "--kube-version",
            metavar="V",
            help=f"Kubernetes release (e.g. {versions.NEWEST}), 'newest' or 'default' ({versions.DEFAULT}); "
            f"default: ${versions.VERSION_VARIABLE}, else {versions.DEFAULT}",
        )
    args = parser.parse_args(argv)

    try:
        version = versions.chosen(args.kube_version, os.environ)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    layout = Layout.default(version)
    if args.command == "provision" and args.check:
        done = is_provisioned(layout)
        print(f"{layout.root}: {'complete' if done else 'not provisioned'}")
        return 0 if done else 1
    try:
        binaries = provision(layout=layout, force=getattr(args, "force", False))
    except ProvisionError as exc:
        print(f"provisioning failed: {exc}", file=sys.stderr)
        print(f"--- last lines of {exc.log} ---\n{tail(exc.log)}", file=sys.stderr)
        return 1
    if args.command == "provision":
        print(f"Kubernetes {version} binaries ready in {layout.bin_dir} (etcd: {binaries.etcd})")
        return 0

    try:
        with LocalCluster(binaries) as cluster:
            print(describe(cluster))
            print(f"export KUBECONFIG={cluster.admin_kubeconfig}")
            print("control plane running; Ctrl-C stops it", flush=True)
            try:
                while True:
                    time.sleep(2.0)
                    cluster.check_alive()
            except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (see LocalCluster)
                with interrupts_deferred():  # a second Ctrl-C once "stopping" shows waits for the stop
                    print("stopping", flush=True)
                    cluster.stop()
    except ClusterError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
