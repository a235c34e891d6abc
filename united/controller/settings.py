"""What ``united run`` can be told, with its defaults: the one place the command line and the
manager read them from (the command line's help shows these values)."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from typing import Literal

from united.api.groups import GROUP


@dataclass(frozen=True)
class Settings:
    kubeconfig: str | None = None
    """None: in-cluster configuration, else ``$KUBECONFIG`` or ``~/.kube/config``."""
    api_group: str = GROUP
    namespaces: tuple[str, ...] = ()
    """Namespaces to serve; empty means all."""
    selector: str | None = None
    """Label selector on UnitedDeployments, to shard a large cluster over several controllers."""
    workers: int = 16
    """Concurrent reconciles per kind: coroutines, cheap. 16 was best of 3/8/16/32 on the bench's
    two cores (cold start 1.62-2.00x -> 1.25-1.43x the write floor, CPU per write -15 to -28 %,
    most likely because with more requests in flight each wake-up of the loop does more)."""
    leader_elect: bool = False
    leader_election_namespace: str = field(default_factory=lambda: os.environ.get("POD_NAMESPACE") or "united-system")
    leader_election_id: str = "united-controller"
    leader_election_lease_duration: float = 15.0
    leader_election_renew_deadline: float = 10.0
    leader_election_retry_period: float = 2.0
    identity: str = field(
        default_factory=lambda: f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    )
    http_host: str = "0.0.0.0"
    http_port: int = 8080
    discovery_interval: float = 30.0
    shutdown_grace: float = 3.0
    """Seconds reconciles in flight may finish in at shutdown before they are cancelled."""
    child_sync_timeout: float = 10.0
    """Seconds a child kind's first LIST may take before its UnitedDeployments are reported
    ``ChildKindUnavailable`` (and every other kind is served); it is picked up when it syncs."""
    client_qps_timeout: float = 30.0
    controller_namespace: str = field(default_factory=lambda: os.environ.get("POD_NAMESPACE") or "united-system")
    """The controller's own namespace: its webhook Secret, excluded from its pod webhooks."""
    webhook_port: int | None = None
    """Serve the WorkloadSpread webhooks on this port (None: no webhook server)."""
    webhook_host: str = "0.0.0.0"
    webhook_url: str | None = None
    """``https://host:port``: create/update the webhook configurations pointing at it; None:
    only patch the ``caBundle`` of the shipped ones (in-cluster, through the Service)."""
    webhook_failure_policy: Literal["Ignore", "Fail"] = "Ignore"
    webhook_namespaces: Literal["targeted", "all"] = "targeted"
    """``targeted``: only namespaces that hold a WorkloadSpread reach the pod webhooks (on
    Kubernetes 1.22+, up to 200 of them; a spread's CREATE puts its namespace in before the
    spread exists); ``all``: every namespace but the excluded ones."""
    webhook_client_ca: str | None = None
    """A PEM file of the CA whose certificates the webhook's clients must present (the API
    server's client certificate for webhooks); None: any client is served."""
    cluster_id: str | None = None
    """This host's identity in member clusters (owner labels); None: the uid of its
    ``kube-system`` namespace, read at start (:func:`host_identity`)."""
    create_member_namespaces: bool = True
    """Create a subset's namespace in a member cluster when it is missing there."""
    settle_heap: bool = False
    """Hold the cyclic garbage collector while the caches fill, then collect once and freeze what
    is left (:func:`united.runtime.heap.settle`). For a process of its own (``united run``);
    tests share one interpreter and leave it alone."""
