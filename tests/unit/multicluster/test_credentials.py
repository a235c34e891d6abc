"""What a kubeconfig Secret yields: the bytes of its key, or a failure in words without values."""

from __future__ import annotations

import base64
from typing import Any

from united.kube.client import SECRETS
from united.multicluster.credentials import GRANT, SecretWatch, _data, _failure
from united.multicluster.health import Failure
from united.multicluster.model import SecretRef
from united.runtime.informer import Informer

REF = SecretRef(namespace="team-a", name="member-1")
SECRET_BYTES = b"apiVersion: v1\nusers: [{name: u, user: {token: t0p-s3cr3t}}]\n"


def secret(data: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "member-1", "namespace": "team-a"}, "data": data}


def test_the_key_is_decoded() -> None:
    assert _data(secret({"kubeconfig": base64.b64encode(SECRET_BYTES).decode()}), REF) == SECRET_BYTES


def test_each_problem_names_the_secret_and_key_never_the_value() -> None:
    cases = {
        None: "secret team-a/member-1 not found",
        "no-key": "secret team-a/member-1 has no key kubeconfig",
        "bad": "secret team-a/member-1 key kubeconfig: not base64",
    }
    inputs = {None: None, "no-key": secret({"other": "eA=="}), "bad": secret({"kubeconfig": "t0p-s3cr3t!"})}
    for case, message in cases.items():
        assert _data(inputs[case], REF) == Failure(message=message, credentials=True)


def test_a_forbidden_watch_says_which_grant_is_missing() -> None:
    informer = Informer(None, SECRETS, namespace="team-a")  # type: ignore[arg-type]
    informer.last_status, informer.last_error = 403, "cannot list secrets in team-a: 403 Forbidden: ..."
    failure = _failure(informer, REF)
    assert failure == Failure(
        status=403,
        message="cannot watch secret team-a/member-1: 403 Forbidden: grant get, list, watch on secrets in team-a "
        f"(see {GRANT})",
        credentials=True,
    )
    informer.last_status, informer.last_error = 0, "cannot list secrets in team-a: cannot reach https://h: timeout"
    assert _failure(informer, REF).message == informer.last_error


def test_nothing_is_known_about_a_secret_not_watched() -> None:
    watch = SecretWatch(None, spawn=lambda coro: coro.close())  # type: ignore[arg-type, return-value]
    assert watch.kubeconfig(REF) is None
