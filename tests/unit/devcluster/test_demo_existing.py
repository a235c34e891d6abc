"""``united demo`` on an existing cluster, the parts without one: which cluster the options
name, the refusals (one ``field: message`` line, exit 2), the ledger of what was created and
the order it is removed in, what counts as the run's own, the sample's tolerations."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from united import cli, data
from united.devcluster import existing
from united.devcluster.existing import (
    REMOVAL_ORDER,
    RUN_LABEL,
    TOLERATION,
    Ledger,
    Target,
    UsageError,
    check_namespace,
    choose_target,
    served_version,
    tolerating,
)
from united.devcluster.versions import NEWEST, KubeVersion
from united.kube.client import (
    CRDS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    NODES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
)

HOME = {"HOME": "/home/someone"}


def test_no_option_means_the_demos_own_cluster() -> None:
    assert choose_target(kubeconfig=None, context=None, current_context=False, env=HOME) is None


def test_the_options_name_a_kubeconfig_and_a_context() -> None:
    assert choose_target(kubeconfig="/k", context=None, current_context=False, env=HOME) == Target(
        Path("/k"), None, "--kubeconfig"
    )
    assert choose_target(kubeconfig="/k", context="kind-a", current_context=False, env=HOME) == Target(
        Path("/k"), "kind-a", "--kubeconfig"
    )
    default = Path("/home/someone/.kube/config")
    assert choose_target(kubeconfig=None, context="kind-a", current_context=False, env=HOME) == Target(
        default, "kind-a", "--context"
    )
    assert choose_target(kubeconfig=None, context=None, current_context=True, env=HOME) == Target(
        default, None, "--current-context"
    )
    env = {**HOME, "KUBECONFIG": "/first:/second"}
    assert choose_target(kubeconfig=None, context=None, current_context=True, env=env) == Target(
        Path("/first"), None, "--current-context"
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"context": "a", "current_context": True}, "--current-context: conflicts with --context: give one of them"),
        ({"context": ""}, "--context: must name a context of the kubeconfig"),
        ({"kubeconfig": ""}, "--kubeconfig: must name a file"),
    ],
)
def test_contradictory_options_are_refused(options: dict[str, object], message: str) -> None:
    arguments = {"kubeconfig": None, "context": None, "current_context": False, **options}
    with pytest.raises(UsageError) as info:
        choose_target(**arguments, env=HOME)  # type: ignore[arg-type]
    assert str(info.value) == message


@pytest.mark.parametrize("name", ["Demo", "-demo", "demo_1", "", "x" * 53])
def test_a_namespace_name_must_be_a_dns_label_with_room_for_the_controllers(name: str) -> None:
    with pytest.raises(UsageError, match=r"^--namespace: .* is not a namespace name"):
        check_namespace(name)


def test_a_namespace_name_of_52_characters_is_fine() -> None:
    check_namespace("x" * 52)  # "-controller" makes 63


def test_the_served_version_is_read_from_distributions_too() -> None:
    assert served_version("v1.20.2") == KubeVersion(1, 20, 2)
    assert served_version("v1.28.3+k3s1") == KubeVersion(1, 28, 3)
    assert served_version("v1.29.1-gke.1589000") == KubeVersion(1, 29, 1)
    assert served_version("?") == NEWEST


def test_the_ledger_removes_kind_by_kind_in_the_reverse_of_creation() -> None:
    ledger = Ledger(run="abc123")
    for kind, name in [
        (CRDS, "a.crd"),
        (CRDS, "b.crd"),
        (NAMESPACES, "demo"),
        (NAMESPACES, "demo-controller"),
        (NODES, "n1"),
        (NODES, "n2"),
        (MUTATING_WEBHOOK_CONFIGURATIONS, "hooks"),
        (VALIDATING_WEBHOOK_CONFIGURATIONS, "hooks"),
    ]:
        ledger.add(kind, name)
    ledger.add(NODES, "n1")  # twice is once
    assert ledger.removal() == [
        (MUTATING_WEBHOOK_CONFIGURATIONS, ["hooks"]),
        (VALIDATING_WEBHOOK_CONFIGURATIONS, ["hooks"]),
        (NAMESPACES, ["demo-controller", "demo"]),
        (NODES, ["n2", "n1"]),
        (CRDS, ["b.crd", "a.crd"]),
    ]
    assert [kind for kind, _ in ledger.removal()] == list(REMOVAL_ORDER)


def test_what_turned_out_to_exist_is_kept_not_removed() -> None:
    ledger = Ledger(run="abc123")
    ledger.add(CRDS, "theirs.crd")
    ledger.discard(CRDS, "theirs.crd")
    ledger.keep(CRDS, "also-theirs.crd")
    assert ledger.removal() == []
    assert ledger.summary(CRDS, kept=True) == ["theirs.crd", "also-theirs.crd"]


def test_only_the_runs_own_objects_are_removed() -> None:
    ledger = Ledger(run="abc123", url="https://127.0.0.1:9443")
    assert ledger.ours({"metadata": {"labels": {RUN_LABEL: "abc123"}}})
    assert not ledger.ours({"metadata": {"labels": {RUN_LABEL: "other1"}}})
    assert not ledger.ours({"metadata": {"name": "x"}})

    def hooks(*urls: str) -> dict[str, object]:
        return {"metadata": {}, "webhooks": [{"clientConfig": {"url": u}} for u in urls]}

    assert ledger.ours(hooks("https://127.0.0.1:9443/mutate-pods", "https://127.0.0.1:9443/validate-pods"))
    assert not ledger.ours(hooks("https://127.0.0.1:9443/mutate", "https://10.0.0.1:443/validate"))
    assert not ledger.ours(hooks("https://127.0.0.1:94430/mutate"))
    assert not ledger.ours({"metadata": {}, "webhooks": [{"clientConfig": {"service": {"name": "united"}}}]})
    assert not ledger.ours(hooks())
    assert not Ledger(run="abc123").ours(hooks("https://127.0.0.1:9443/mutate"))


def test_every_pod_template_of_a_sample_tolerates_the_simulated_nodes() -> None:
    for name in ("zones-percent", "statefulset", "cloneset"):
        (doc,) = [d for d in data.documents(data.sample(name)) if d.get("kind") == "UnitedDeployment"]
        out = tolerating(doc)
        templates = list(out["spec"]["template"].values())
        assert templates, name
        for template in templates:
            assert TOLERATION in template["spec"]["template"]["spec"]["tolerations"], name
        assert "tolerations" not in str(doc), "the sample itself is not changed"
        assert tolerating(out) == out, "added once"
    workload = {"kind": "Deployment", "spec": {"template": {"spec": {"tolerations": [{"key": "x"}]}}}}
    assert tolerating(workload)["spec"]["template"]["spec"]["tolerations"] == [{"key": "x"}, TOLERATION]


def _kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "a",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u"}}],
    }))  # fmt: skip
    return path


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--kubeconfig", "/nonexistent/config"], "--kubeconfig: kubeconfig /nonexistent/config: no such file"),
        (["--context", "nope", "--kubeconfig", "{config}"], "--kubeconfig: kubeconfig {config}: "),
        (["--namespace", "x"], "--namespace: only with --kubeconfig, --context or --current-context"),
        (["--webhook-host", "10.0.0.1"], "--webhook-host: only with --kubeconfig, --context or --current-context"),
        (["--kubeconfig", "{config}", "--kube-version", "newest"], "--kube-version: the existing cluster runs its own"),
        (["--current-context", "--context", "a"], "--current-context: conflicts with --context"),
        (["--kubeconfig", "{config}", "--namespace", "Bad"], "--namespace: 'Bad' is not a namespace name"),
        (["--kubeconfig", "{config}", "--sample", "multicluster"], "--sample: its subsets name member clusters"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str], line: str
) -> None:
    def never(**_: object) -> int:
        raise AssertionError("the demo must not start")

    monkeypatch.setattr(existing, "_serve", never)
    config = _kubeconfig(tmp_path)
    assert cli.main(["demo", *(a.replace("{config}", str(config)) for a in argv)]) == 2
    captured = capsys.readouterr()
    (printed,) = captured.err.splitlines()
    assert printed.startswith(line.replace("{config}", str(config))), printed
    assert captured.out == ""


def test_the_options_reach_the_demo_on_an_existing_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, object]] = []

    def fake_run(**options: object) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(existing, "run", fake_run)
    monkeypatch.setenv("HOME", "/home/someone")
    monkeypatch.delenv("KUBECONFIG", raising=False)
    argv = ["demo", "--context", "kind-a", "--namespace", "try-it", "--webhook-host", "172.18.0.1", "--sample", "s"]
    assert cli.main(argv) == 0
    assert cli.main(["demo", "--current-context"]) == 0
    assert seen == [
        {
            "target": Target(Path("/home/someone/.kube/config"), "kind-a", "--context"),
            "sample": "s",
            "namespace": "try-it",
            "webhook_host": "172.18.0.1",
        },
        {
            "target": Target(Path("/home/someone/.kube/config"), None, "--current-context"),
            "sample": None,
            "namespace": "demo",
            "webhook_host": "127.0.0.1",
        },
    ]
