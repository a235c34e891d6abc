"""The Helm chart (charts/united): one source with the kustomize manifests, lint-clean, and its
values rendered as golden files.

* With default values ``helm template`` renders exactly the objects of ``manifests/base`` (less
  its Namespace: Helm's ``--create-namespace`` makes it); with ``apiGroup=apps.kruise.io`` those
  of ``manifests/kruise``. The manifests stay the source; a template that drifts fails here.
* The files the chart ships verbatim (CRDs, alert rules, dashboard) are the repository's, copied
  by ``scripts/sync_chart.py``.
* Every value set renders as its golden file under ``golden/``; after an intended change,
  regenerate them with ``UNITED_UPDATE_GOLDEN=1 python -m pytest tests/unit/chart`` and review
  the diff.
* The flags the chart puts on the container are parsed by ``united run``'s own parser.

helm is built from its Go module once per machine (tests/support/tools.py).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.support.tools import HELM, ensure_tool
from united.cli import parser
from united.cli.run import flag_errors
from united.data import ROOT as DATA_ROOT
from united.kustomization import build

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "united"
GOLDEN = Path(__file__).parent / "golden"
NAMESPACE = "united-system"
UPDATE = os.environ.get("UNITED_UPDATE_GOLDEN") == "1"

Obj = dict[str, Any]

VALUE_SETS: dict[str, list[str]] = {
    "default": [],
    "kruise": ["--set", "apiGroup=apps.kruise.io"],
    "webhook-disabled": ["--set", "webhook.enabled=false"],
    "single-replica": ["--set", "replicaCount=1", "--set", "leaderElection.enabled=false"],
    "webhook-url": ["--set", "webhook.url=https://192.0.2.10:9443/"],
    "everything": [
        "--set", "image.repository=registry.example/united",
        "--set", "image.tag=0.1.0-dev",
        "--set", "image.pullPolicy=Always",
        "--set", "imagePullSecrets[0].name=pull",
        "--set", "replicaCount=3",
        "--set", "leaderElection.leaseDuration=30",
        "--set", "leaderElection.renewDeadline=20",
        "--set", "leaderElection.retryPeriod=4",
        "--set", "namespaces={shop,payments}",
        "--set", "selector=shard=a",
        "--set", "workers=8",
        "--set", "logFormat=console",
        "--set", "logLevel=DEBUG",
        "--set", "httpPort=8081",
        "--set", "webhook.port=10443",
        "--set", "webhook.failurePolicy=Fail",
        "--set", "webhook.timeoutSeconds=5",
        "--set", "memberClusters.clusterId=host-a",
        "--set", "memberClusters.createNamespaces=false",
        "--set", "memberClusters.credentials.namespace=united-clusters",
        "--set", "memberClusters.credentials.secrets={member-1,member-2}",
        "--set", "extraArgs={--discovery-interval=60}",
        "--set", "serviceMonitor.enabled=true",
        "--set", "serviceMonitor.labels.release=prometheus",
        "--set", "prometheusRule.enabled=true",
        "--set", "dashboard.enabled=true",
        "--set", "admissionPolicy.enabled=true",
        "--set", "networkPolicy.enabled=true",
        "--set", "networkPolicy.apiServerCIDRs={10.0.0.10/32,10.0.0.11/32}",
        "--set", "priorityClassName=system-cluster-critical",
        "--set", "nodeSelector.role=control",
        "--set", "podAnnotations.team=platform",
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def helm() -> Path:
    return ensure_tool(HELM)


def run_helm(helm: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HELM_CACHE_HOME": "/nonexistent", "HELM_CONFIG_HOME": "/nonexistent"}
    result = subprocess.run([str(helm), *args], capture_output=True, text=True, env=env, timeout=120, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def template(helm: Path, values: Sequence[str] = ()) -> str:
    return run_helm(helm, "template", "united", str(CHART), "--namespace", NAMESPACE, *values).stdout


def objects(rendered: str) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def keyed(docs: Sequence[Obj]) -> dict[tuple[str, str, str], Obj]:
    out: dict[tuple[str, str, str], Obj] = {}
    for doc in docs:
        key = (doc["kind"], doc["metadata"].get("namespace", ""), doc["metadata"]["name"])
        assert key not in out, f"{key} rendered twice"
        out[key] = doc
    return out


WEBHOOK_CONFIGURATIONS = frozenset({"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"})


def kustomized(overlay: str) -> dict[tuple[str, str, str], Obj]:
    """The overlay as the API server stores it: kustomize also stamps its namespace on the
    (cluster-scoped) webhook configurations, which the API server drops."""
    docs = [doc for doc in build(DATA_ROOT, f"manifests/{overlay}") if doc["kind"] != "Namespace"]
    for doc in docs:
        if doc["kind"] in WEBHOOK_CONFIGURATIONS:
            doc["metadata"].pop("namespace", None)
    return keyed(docs)


def sync_chart() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sync_chart", REPO / "scripts" / "sync_chart.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def container(docs: Sequence[Obj]) -> Obj:
    deployment = next(doc for doc in docs if doc["kind"] == "Deployment")
    found: Obj = deployment["spec"]["template"]["spec"]["containers"][0]
    return found


@pytest.mark.parametrize(
    "overlays, values",
    [
        (["base"], []),
        (["kruise"], VALUE_SETS["kruise"]),
        (["base", "admission-policy"], ["--set", "admissionPolicy.enabled=true"]),
        (["base", "network-policy"], ["--set", "networkPolicy.enabled=true"]),
    ],
)
def test_default_values_render_the_objects_of_the_kustomize_manifests(
    helm: Path, overlays: list[str], values: list[str]
) -> None:
    rendered = keyed(objects(template(helm, values)))
    expected = {key: obj for overlay in overlays for key, obj in kustomized(overlay).items()}
    overlay = "+".join(overlays)
    assert sorted(rendered) == sorted(expected)
    for key, obj in expected.items():
        assert rendered[key] == obj, f"{key} differs from manifests/{overlay}"


def test_the_chart_ships_the_repositorys_crds_rules_and_dashboard(helm: Path) -> None:
    assert sync_chart().stale(REPO) == []
    rendered = objects(run_helm(helm, "template", "united", str(CHART), "--include-crds").stdout)
    crds = sorted(doc["metadata"]["name"] for doc in rendered if doc["kind"] == "CustomResourceDefinition")
    assert crds == ["clusters.apps.united.io", "uniteddeployments.apps.united.io", "workloadspreads.apps.united.io"]


def test_a_stale_copy_is_reported(tmp_path: Path) -> None:
    module = sync_chart()
    for source in module.copies(REPO).values():
        target = tmp_path / source.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
    module.sync(tmp_path)
    assert module.stale(tmp_path) == []
    (tmp_path / "manifests/monitoring/alerts.yaml").write_text("groups: []\n")
    (tmp_path / "charts/united/files/left-over.json").write_text("{}")
    assert module.stale(tmp_path) == [
        tmp_path / "charts/united/files/alerts.yaml",
        tmp_path / "charts/united/files/left-over.json",
    ]


def test_helm_lint_passes_strictly_with_default_and_all_values(helm: Path) -> None:
    for values in (VALUE_SETS["default"], VALUE_SETS["everything"]):
        result = run_helm(helm, "lint", "--strict", str(CHART), *values)
        assert "0 chart(s) failed" in result.stdout, result.stdout


@pytest.mark.parametrize("name", sorted(VALUE_SETS))
def test_each_value_set_renders_its_golden_file(helm: Path, name: str) -> None:
    rendered = template(helm, VALUE_SETS[name])
    golden = GOLDEN / f"{name}.yaml"
    if UPDATE:
        golden.write_text(rendered)
    assert golden.is_file(), f"{golden} missing: UNITED_UPDATE_GOLDEN=1 python -m pytest tests/unit/chart"
    assert rendered == golden.read_text(), f"{golden.name} differs; review, then UNITED_UPDATE_GOLDEN=1"


def test_every_value_reaches_the_controller_as_the_flag_it_means(helm: Path) -> None:
    docs = objects(template(helm, VALUE_SETS["everything"]))
    main = container(docs)
    assert main["args"][0] == "run"
    args = parser().parse_args(main["args"])
    assert flag_errors(args) == []
    assert (args.leader_elect, args.leader_election_lease_duration, args.leader_election_renew_deadline,
            args.leader_election_retry_period) == (True, 30.0, 20.0, 4.0)  # fmt: skip
    assert (args.namespace, args.selector, args.workers) == (["shop", "payments"], "shard=a", 8)
    assert (args.log_format, args.log_level, args.http_port) == ("console", "DEBUG", 8081)
    assert (args.webhook_port, args.webhook_failure_policy) == (10443, "Fail")
    assert (args.cluster_id, args.create_member_namespaces, args.discovery_interval) == ("host-a", False, 60.0)
    assert main["image"] == "registry.example/united:0.1.0-dev"
    assert {p["name"]: p["containerPort"] for p in main["ports"]} == {"http": 8081, "webhook": 10443}
    by_kind = keyed(docs)
    mutating = by_kind[("MutatingWebhookConfiguration", "", "united-workloadspread")]["webhooks"][0]
    assert (mutating["failurePolicy"], mutating["timeoutSeconds"]) == ("Fail", 5)
    role = by_kind[("Role", "united-clusters", "united-cluster-credentials")]
    assert role["rules"][0]["resourceNames"] == ["member-1", "member-2"]
    rule = by_kind[("PrometheusRule", NAMESPACE, "united-controller")]
    assert rule["spec"] == yaml.safe_load((REPO / "manifests/monitoring/alerts.yaml").read_text())
    dashboard = by_kind[("ConfigMap", NAMESPACE, "united-dashboard")]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["data"]["united.json"] == (REPO / "manifests/monitoring/dashboard.json").read_text().rstrip("\n")


def test_default_flags_are_the_controllers_defaults_and_a_disabled_webhook_leaves_no_configuration(
    helm: Path,
) -> None:
    default = parser().parse_args(container(objects(template(helm)))["args"])
    assert (default.leader_elect, default.webhook_port, default.api_group) == (True, 9443, "apps.united.io")
    docs = objects(template(helm, VALUE_SETS["webhook-disabled"]))
    assert parser().parse_args(container(docs)["args"]).webhook_port is None
    kinds = {doc["kind"] for doc in docs}
    assert not kinds & {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    assert [p["name"] for p in container(docs)["ports"]] == ["http"]


def test_a_webhook_url_goes_to_both_configurations_and_the_controller(helm: Path) -> None:
    """``webhook.url``: the API server calls that URL (no Service), and the controller is told
    the same one, so its certificate names that host and it keeps the configurations there."""
    docs = objects(template(helm, VALUE_SETS["webhook-url"]))
    args = parser().parse_args(container(docs)["args"])
    assert args.webhook_url == "https://192.0.2.10:9443"
    by_kind = keyed(docs)
    clients = {
        kind: [w["clientConfig"] for w in by_kind[(kind, "", "united-workloadspread")]["webhooks"]]
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    }
    assert clients == {
        "MutatingWebhookConfiguration": [{"url": "https://192.0.2.10:9443/mutate-pods"}],
        "ValidatingWebhookConfiguration": [
            {"url": "https://192.0.2.10:9443/validate-pods"},
            {"url": "https://192.0.2.10:9443/validate-workloadspreads"},
        ],
    }
    default = objects(template(helm))
    assert parser().parse_args(container(default)["args"]).webhook_url is None


@pytest.mark.parametrize(
    "values, message",
    [
        (["--set", "webhook.url=http://192.0.2.10:9443"], "/webhook/url"),
        (["--set", "webhook.url=https://192.0.2.10:9443/hooks"], "/webhook/url"),
        (["--set", "leaderElection.enabled=false"], "leaderElection.enabled: required with more than one replica"),
        (["--set", "memberClusters.credentials.secrets={m1}"], "memberClusters.credentials.namespace: required"),
        (["--set", "webhook.failurePolicy=Sometimes"], "/webhook/failurePolicy"),
        (["--set", "apiGroup=apps.example.io"], "/apiGroup"),
        (["--set", "logFormat=xml"], "/logFormat"),
    ],
)
def test_values_the_controller_cannot_run_with_are_refused_by_name(helm: Path, values: list[str], message: str) -> None:
    result = run_helm(helm, "template", "united", str(CHART), *values, check=False)
    assert result.returncode != 0
    assert message in result.stderr
