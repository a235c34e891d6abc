"""``python -m bench.cache``: bytes per cached object in-process (tracemalloc), no cluster.

Pods and children shaped as the API server returns them (the bench's own, plus what the
server, admission and the kubelet add: uid, resourceVersion, managedFields, defaults, a
service-account volume, default tolerations, a running status) go through the informer's
own path — projection, :func:`~united.runtime.informer.compact`, a :class:`Store` — once
alone, and once also indexed by a second store holding the same objects (a selected
informer following an unselected one). ``--varied`` gives every three children their own
image and ``app`` label (a UnitedDeployment each), so the children of different
UnitedDeployments share less. The memory scenario of ``python -m bench`` measures the
same as the process's RSS on a real control plane.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import tracemalloc
import uuid
from collections.abc import Callable

from bench.workload import deployment_status, floor_plan, plain_deployment, pod, pod_status, united_deployment
from united.api.document import Json
from united.api.groups import GROUP
from united.kube.client import DEPLOYMENTS, PODS, Resource
from united.runtime.informer import Store, forget_shared, keeper
from united.uniteddeployment.keys import Keys

SUBSET = Keys(GROUP).subset_name


def _template() -> Json:
    template: Json = floor_plan(united_deployment("mem", "mem", subsets=1, replicas=2))["children"][0]
    return template


def server_pod(i: int, template: Json) -> Json:
    """A running pod of ``template`` as a LIST returns it."""
    p = pod(f"pod-{i:05d}", "mem", template=template)
    p["metadata"] |= {
        "uid": str(uuid.uuid4()),
        "resourceVersion": str(100_000 + i),
        "creationTimestamp": "2026-11-25T00:00:00Z",
        "managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {}}}],
    }
    volume = f"default-token-{i:05x}"
    for c in p["spec"]["containers"]:
        c |= {"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
        c.setdefault("imagePullPolicy", "IfNotPresent")
        c["volumeMounts"] = [{"name": volume, "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io"}]
    p["spec"] |= {
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "securityContext": {},
        "priority": 0,
        "enableServiceLinks": True,
        "volumes": [{"name": volume, "secret": {"secretName": volume, "defaultMode": 420}}],
        "tolerations": [
            {"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            for k in ("not-ready", "unreachable")
        ],
    }
    p["status"] = pod_status(f"10.0.{i // 256 % 256}.{i % 256}")
    decoded: Json = json.loads(json.dumps(p))
    return decoded


def server_child(i: int, template: Json, *, varied: bool = False) -> Json:
    """A child Deployment with a healthy status as a LIST returns it; ``varied``: its own
    image and ``app`` label for every three (one UnitedDeployment's subsets)."""
    d = plain_deployment(f"child-{i:05d}", "mem", replicas=2, subset_label=True, template=template)
    d["metadata"] |= {
        "uid": str(uuid.uuid4()),
        "resourceVersion": str(200_000 + i),
        "creationTimestamp": "2026-11-25T00:00:00Z",
        "generation": 1,
    }
    d["status"] = deployment_status(2)
    if varied:
        ud = f"ud-{i // 3}"
        for c in d["spec"]["template"]["spec"]["containers"]:
            c["image"] = f"registry.invalid/{ud}:1"
        for labels in (d["metadata"]["labels"], d["spec"]["template"]["metadata"]["labels"]):
            labels["app"] = ud
    decoded: Json = json.loads(json.dumps(d))
    return decoded


def bytes_per_object(resource: Resource, make: Callable[[int], Json], n: int, *, stores: int = 1) -> float:
    """Bytes allocated and kept per object once ``n`` of them are cached in ``stores`` stores."""
    keep = keeper(resource)
    objects = [make(i) for i in range(n)]
    forget_shared()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = [Store(label=SUBSET) for _ in range(stores)]
        for obj in objects:
            kept = keep(obj)
            for store in held:
                store.upsert(kept)
        del objects
        gc.collect()
        return (tracemalloc.get_traced_memory()[0] - before) / n
    finally:
        tracemalloc.stop()


def measure(n: int) -> dict[str, float]:
    template = _template()
    figures: dict[str, float] = {
        "json_bytes_per_pod": len(json.dumps(server_pod(0, template))),
        "json_bytes_per_child": len(json.dumps(server_child(0, template))),
    }
    for stores in (1, 2):
        suffix = "" if stores == 1 else "_two_stores"
        figures[f"bytes_per_pod{suffix}"] = bytes_per_object(PODS, lambda i: server_pod(i, template), n, stores=stores)
        figures[f"bytes_per_child{suffix}"] = bytes_per_object(
            DEPLOYMENTS, lambda i: server_child(i, template), n, stores=stores
        )
    figures["bytes_per_child_varied"] = bytes_per_object(
        DEPLOYMENTS, lambda i: server_child(i, copy.deepcopy(template), varied=True), n
    )
    return figures


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.cache", description=__doc__.split("\n\n")[0])
    p.add_argument("--objects", type=int, default=3000, help="objects of each kind cached (default 3000)")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = p.parse_args(argv)
    figures = measure(args.objects)
    if args.json:
        print(json.dumps(figures))
        return
    for name, value in figures.items():
        print(f"{name:32} {value:8.0f}")


if __name__ == "__main__":
    main()
