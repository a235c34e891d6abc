"""Member health: every kind of failure to its reason, since-times, and when the status is written."""

from __future__ import annotations

import subprocess
import sys

import pytest

from united.api.timestamp import parse_time
from united.multicluster.health import (
    CREDENTIALS_UNAVAILABLE,
    FORBIDDEN,
    HEARTBEAT,
    PROBING,
    REACHABLE,
    UNAUTHORIZED,
    UNREACHABLE,
    Failure,
    Health,
    advance,
    classify,
    cluster_ready,
    cluster_status,
    condition,
)

T0 = parse_time("2026-11-24T16:00:00Z") or 0.0
REFUSED = "cannot reach https://10.0.0.7:6443: connection refused"


@pytest.mark.parametrize(
    ("failure", "version", "expected"),
    [
        (None, None, (PROBING, "waiting for the first probe")),
        (None, "v1.20.2", (REACHABLE, "the API server answered (Kubernetes v1.20.2)")),
        (Failure(0, REFUSED, "get /version"), None, (UNREACHABLE, f"get /version: {REFUSED}")),
        (
            Failure(0, "cannot reach https://m:6443: no answer in time"),
            None,
            (UNREACHABLE, "cannot reach https://m:6443: no answer in time"),
        ),
        (
            Failure(503, "503 ServiceUnavailable: etcd down", "get /version"),
            None,
            (UNREACHABLE, "get /version: 503 ServiceUnavailable: etcd down"),
        ),
        (
            Failure(429, "429 TooManyRequests: slow down", "list pods"),
            None,
            (UNREACHABLE, "list pods: 429 TooManyRequests: slow down"),
        ),
        (
            Failure(401, "401 Unauthorized: Unauthorized", "get /version"),
            None,
            (UNAUTHORIZED, "get /version: the member refused the credentials (401 Unauthorized: Unauthorized)"),
        ),
        (
            Failure(403, "403 Forbidden: deployments.apps is forbidden", "list deployments.apps"),
            None,
            (FORBIDDEN, "list deployments.apps: 403 Forbidden: deployments.apps is forbidden"),
        ),
        (
            Failure(0, "secret united-clusters/m1 has no key kubeconfig", credentials=True),
            None,
            (CREDENTIALS_UNAVAILABLE, "secret united-clusters/m1 has no key kubeconfig"),
        ),
        (Failure(404, "", "get /version"), None, (UNREACHABLE, "get /version: no details")),
    ],
)
def test_classify(failure: Failure | None, version: str | None, expected: tuple[str, str]) -> None:
    assert classify(failure, version) == expected


def test_credentials_win_over_the_status() -> None:
    """A Secret that cannot be read with a 403 is the host's problem, not the member's answer."""
    reason, _ = classify(Failure(403, "403 Forbidden: cannot get secrets", credentials=True), None)
    assert reason == CREDENTIALS_UNAVAILABLE


def test_long_messages_are_clipped_to_one_line() -> None:
    _, message = classify(Failure(500, "x\n" * 5000), None)
    assert "\n" not in message and len(message) == 1024 and message.endswith("…")


def test_since_is_kept_while_the_status_stays() -> None:
    down = advance(None, UNREACHABLE, REFUSED, T0)
    assert down == Health(UNREACHABLE, REFUSED, T0, "")
    still = advance(down, UNAUTHORIZED, "401", T0 + 30)
    assert (still.reason, still.since, still.status) == (UNAUTHORIZED, T0, "False")
    up = advance(still, REACHABLE, "ok", T0 + 40, version="v1.20.2")
    assert (up.since, up.status, up.version, up.ready) == (T0 + 40, "True", "v1.20.2", True)
    assert advance(up, REACHABLE, "ok", T0 + 50).since == T0 + 40
    again = advance(up, UNREACHABLE, REFUSED, T0 + 60)
    assert (again.since, again.version) == (T0 + 60, "v1.20.2")
    assert advance(None, PROBING, "", T0).status == "Unknown"


def test_condition() -> None:
    down = Health(UNREACHABLE, REFUSED, T0 + 2, "v1.20.2")
    assert condition(down, generation=4) == {
        "type": "Ready",
        "status": "False",
        "observedGeneration": 4,
        "lastTransitionTime": "2026-11-24T16:00:02Z",
        "reason": UNREACHABLE,
        "message": f"{REFUSED} (since 2026-11-24T16:00:02Z)",
    }
    up = condition(Health(REACHABLE, "fine", T0), generation=1)
    assert (up["status"], up["message"]) == ("True", "fine")


def test_seed_restores_since_and_message() -> None:
    down = Health(UNAUTHORIZED, "refused", T0 + 2, "v1.20.2")
    status = cluster_status(None, down, T0 + 9, 1)
    assert status is not None
    assert Health.seed(status) == down
    assert Health.seed(None) is None
    assert Health.seed({"conditions": [{"type": "Ready", "status": "True", "reason": "Unreachable"}]}) is None
    assert Health.seed({"conditions": [{"type": "Other", "status": "True"}]}) is None


def test_status_written_on_change_and_heartbeat_only() -> None:
    up = Health(REACHABLE, "fine", T0, "v1.20.2")
    first = cluster_status(None, up, T0 + 1, 2)
    assert first == {
        "observedGeneration": 2,
        "kubernetesVersion": "v1.20.2",
        "lastProbeTime": "2026-11-24T16:00:01Z",
        "conditions": [condition(up, generation=2)],
    }
    assert cluster_status(first, up, T0 + 1 + HEARTBEAT - 1, 2) is None
    beat = cluster_status(first, up, T0 + 1 + HEARTBEAT, 2)
    assert beat is not None and beat["lastProbeTime"] == "2026-11-24T16:01:01Z"
    assert cluster_status(first, up, T0 + 5, 3) is not None
    assert cluster_status(first, advance(up, REACHABLE, "fine", T0 + 5, version="v1.21.0"), T0 + 5, 2) is not None
    down = cluster_status(first, advance(up, UNREACHABLE, REFUSED, T0 + 5), T0 + 5, 2)
    assert down is not None and down["conditions"][0]["reason"] == UNREACHABLE


def test_probing_never_replaces_an_answer() -> None:
    stored = cluster_status(None, Health(UNREACHABLE, REFUSED, T0), T0, 1)
    assert cluster_status(stored, Health(PROBING, "waiting", T0 + 100), T0 + 100, 1) is None
    fresh = cluster_status({}, Health(PROBING, "waiting", T0), T0, 1)
    assert fresh is not None and fresh["conditions"][0]["status"] == "Unknown"
    assert "kubernetesVersion" not in fresh


def test_the_pure_modules_import_no_client() -> None:
    """The pure core stays testable offline: no aiohttp, no kubernetes_asyncio."""
    modules = "health, model, identity, gc"
    code = (
        f"import sys; from united.multicluster import {modules}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aiohttp', 'kubernetes_asyncio', 'united.kube')"
        " or m.startswith('united.kube')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_cluster_ready_condition_of_a_remote_subset() -> None:
    assert cluster_ready("member-1", UNREACHABLE, T0 + 2, REFUSED) == {
        "type": "ClusterReady",
        "status": "False",
        "lastTransitionTime": "2026-11-24T16:00:02Z",
        "reason": "ClusterUnreachable",
        "message": f"cluster member-1 unreachable since 2026-11-24T16:00:02Z: {REFUSED}; showing the last-known counts",
    }


@pytest.mark.parametrize(
    ("reason", "subset_reason", "words"),
    [
        (UNAUTHORIZED, "ClusterUnauthorized", "refuses our credentials"),
        (FORBIDDEN, "ClusterForbidden", "forbids a request we need"),
        (CREDENTIALS_UNAVAILABLE, "ClusterCredentialsUnavailable", "has no usable credentials"),
        (PROBING, "ClusterSyncing", "not synced yet"),
        ("ClusterNotFound", "ClusterNotFound", "has no Cluster object"),
        ("NamespaceNotAllowed", "NamespaceNotAllowed", "does not admit this namespace"),
        ("ClusterSyncing", "ClusterSyncing", "not synced yet"),
    ],
)
def test_cluster_ready_reasons(reason: str, subset_reason: str, words: str) -> None:
    condition = cluster_ready("m", reason, T0)
    assert condition["reason"] == subset_reason
    assert condition["message"] == f"cluster m {words} since 2026-11-24T16:00:00Z; showing the last-known counts"
