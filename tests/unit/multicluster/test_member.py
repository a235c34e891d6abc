"""A member's client, health and notifications, without a member: the Secret's answers are
scripted. Probes against real API servers are in tests/e2e/multicluster/test_clusters.py."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
import yaml

from united.kube import KubeClient
from united.kube.errors import Fenced
from united.multicluster import member as member_module
from united.multicluster.credentials import SecretWatch
from united.multicluster.health import CREDENTIALS_UNAVAILABLE, PROBING, Failure
from united.multicluster.member import Member, Members
from united.multicluster.model import ClusterSpec, SecretRef

SPEC = ClusterSpec(name="member-1", secret_ref=SecretRef(namespace="united-clusters", name="member-1"))


def kubeconfig(token: str, **user: Any) -> bytes:
    return yaml.safe_dump(
        {
            "clusters": [{"name": "m", "cluster": {"server": "https://10.0.0.7:6443"}}],
            "users": [{"name": "u", "user": {"token": token, **user}}],
            "contexts": [{"name": "c", "context": {"cluster": "m", "user": "u"}}],
            "current-context": "c",
        }
    ).encode()


class Secrets:
    def __init__(self, answer: bytes | Failure | None) -> None:
        self.answer = answer
        self.rereads = 0

    def kubeconfig(self, ref: SecretRef) -> bytes | Failure | None:
        return self.answer

    async def reread(self, ref: SecretRef) -> None:
        self.rereads += 1


class Host:
    fence: Any = None


def member(secrets: Secrets, changes: list[tuple[str, bool]], host: Host | None = None) -> Member:
    return Member(
        SPEC,
        host=cast(KubeClient, host or Host()),
        secrets=cast(SecretWatch, secrets),
        health=None,
        changed=lambda m, flipped: changes.append((m.health.reason, flipped)),
        spawn=asyncio.ensure_future,
    )


async def test_a_secret_problem_is_credentials_unavailable_and_flips_once() -> None:
    changes: list[tuple[str, bool]] = []
    secrets = Secrets(Failure(message="secret united-clusters/member-1 has no key kubeconfig", credentials=True))
    m = member(secrets, changes)
    assert m.health.reason == PROBING
    await m.probe()
    await m.probe()
    assert changes == [(CREDENTIALS_UNAVAILABLE, True), (CREDENTIALS_UNAVAILABLE, False)]
    assert m.health.message == "secret united-clusters/member-1 has no key kubeconfig" and m.client is None


async def test_an_unusable_kubeconfig_stays_unavailable_until_the_secret_changes() -> None:
    changes: list[tuple[str, bool]] = []
    secrets = Secrets(kubeconfig("t0p-s3cr3t", exec={"command": "/bin/sh"}))
    m = member(secrets, changes)
    for _ in range(2):
        await m.probe()
        assert m.health.reason == CREDENTIALS_UNAVAILABLE and m.client is None
    assert "users[0].user.exec: Forbidden" in m.health.message and "t0p-s3cr3t" not in m.health.message


async def test_the_secret_still_loading_says_nothing() -> None:
    changes: list[tuple[str, bool]] = []
    m = member(Secrets(None), changes)
    await m.probe()
    assert changes == [] and m.health.reason == PROBING


async def test_member_writes_pass_the_host_fence_as_it_is_at_each_request() -> None:
    host = Host()
    m = member(Secrets(None), [], host)
    assert await m.connect(kubeconfig("token-a")) is None
    client = m.client
    assert client is not None and client.fence is not None
    client.fence("POST", "/apis/apps/v1/namespaces/x/deployments")  # no host fence yet: allowed

    def refuse(method: str, path: str) -> None:
        raise Fenced(f"{method} {path}: not the leader")

    host.fence = refuse  # the host's elector sets its fence once elected
    with pytest.raises(Fenced):
        client.fence("PATCH", "/apis/apps/v1/namespaces/x/deployments/d")
    await m.close()


async def test_new_credentials_swap_the_client_and_restart_the_informers() -> None:
    m = member(Secrets(None), [])
    await m.connect(kubeconfig("token-a"))
    old = m.client

    class Restarted:
        def __init__(self) -> None:
            self.clients: list[KubeClient] = []

        def restart(self, client: KubeClient) -> None:
            self.clients.append(client)

    informer = Restarted()
    m.informers.append(informer)  # type: ignore[arg-type]
    await m.connect(kubeconfig("token-b"))
    assert m.client is not old and informer.clients == [m.client]
    assert m.client is not None and m.client._api.configuration.api_key == {"BearerToken": "Bearer token-b"}
    await asyncio.sleep(1.2)  # the old client is closed after the grace
    assert old is not None and old._api.rest_client.pool_manager.closed
    await m.close()


class Refusing:
    def __init__(self, status: int, error: str) -> None:
        self.last_status, self.last_error = status, error


@pytest.mark.parametrize(("status", "reason"), [(403, "Forbidden"), (401, "Unauthorized")])
async def test_a_refused_member_informer_outweighs_an_answered_probe(
    status: int, reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    changes: list[tuple[str, bool]] = []
    secrets = Secrets(kubeconfig("token-a"))
    m = member(secrets, changes)

    async def answered(client: KubeClient) -> tuple[None, str]:
        return None, "v1.20.2"

    monkeypatch.setattr(m, "_version", answered)
    await m.probe()
    assert m.health.reason == "Reachable" and m.health.version == "v1.20.2"
    error = f"cannot list deployments.apps in shop: {status} {reason}: deployments.apps is forbidden"
    m.informers.append(Refusing(status, error))  # type: ignore[arg-type]
    await m.probe()
    assert (m.health.reason, m.health.version) == (reason, "v1.20.2")
    assert "cannot list deployments.apps in shop" in m.health.message
    assert changes[-1] == (reason, True) and secrets.rereads == (1 if status == 401 else 0)
    m.informers[0].last_status, m.informers[0].last_error = 0, ""
    await m.probe()
    assert m.health.reason == "Reachable"
    await m.close()


class Registry(Secrets):
    """What Members asks of the SecretWatch besides a member's kubeconfig."""

    def on_change(self, callback: Any) -> None:
        pass

    def watch(self, ref: SecretRef) -> None:
        pass

    def forget(self, keep: Any) -> None:
        pass

    def stop(self) -> None:
        pass


async def test_removing_a_member_does_not_wait_for_its_teardown_and_a_stuck_one_is_given_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Cluster informer's handler calls remove(): a member stuck closing must not hold up
    the next Cluster event (here: the same Cluster created again)."""
    monkeypatch.setattr(member_module, "TEARDOWN_TIMEOUT", 0.2)
    released = asyncio.Event()

    async def stuck() -> None:
        await released.wait()

    members = Members(cast(KubeClient, Host()), secrets=cast(SecretWatch, Registry(None)), spawn=asyncio.ensure_future)
    gone: list[str] = []
    members.subscribe(gone.append)
    old = members.apply(SPEC, status=None)
    monkeypatch.setattr(old, "close", stuck)
    members.remove(SPEC.name)
    assert gone == [SPEC.name] and members.get(SPEC.name) is None
    again = members.apply(SPEC, status=None)
    assert again is not old and members.get(SPEC.name) is again
    loop = asyncio.get_running_loop()
    started = loop.time()
    await members.close()
    assert loop.time() - started < 1.0 and not released.is_set()
