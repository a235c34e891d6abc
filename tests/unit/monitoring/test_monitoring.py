"""The Grafana dashboard and the alert rules (manifests/monitoring): they read only metrics the
controller exports, cover what an operator must see, and the rules pass ``promtool check
rules`` and their unit tests (``promtool test rules``, alerts_test.yaml). promtool is built
from its Go module once per machine (tests/support/tools.py)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from tests.support.tools import PROMTOOL, ensure_tool
from united.runtime.metrics import Metrics

REPO = Path(__file__).resolve().parents[3]
MONITORING = REPO / "manifests" / "monitoring"
RULES = MONITORING / "alerts.yaml"
DASHBOARD = MONITORING / "dashboard.json"
RULE_TESTS = Path(__file__).parent / "alerts_test.yaml"

SCRAPE_METRICS = frozenset({"up"})
"""Written by Prometheus itself for every scrape target, not by the controller."""
_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset", "inf"}
)
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count")}


def exported() -> set[str]:
    """Every sample name the controller's ``/metrics`` can expose (labelled families included,
    even before their first series)."""
    metrics = Metrics(process_metrics=False)
    names: set[str] = set()
    families: Iterable[Metric] = text_string_to_metric_families(metrics.exposition().decode())
    for family in families:
        names |= {family.name + suffix for suffix in _SUFFIXES.get(family.type, ("",))}
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: identifiers that are not functions,
    keywords, label names (inside ``{}`` or a ``by (...)``/``on (...)`` list) or durations."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = set()
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?", text):
        name, call = match.group(1), match.group(2)
        if call or name.lower() in _KEYWORDS or name.startswith("$"):
            continue
        names.add(name)
    return names


def rule_exprs() -> dict[str, str]:
    rules = yaml.safe_load(RULES.read_text())
    return {f"{r['alert']}/{r['labels']['severity']}": r["expr"] for g in rules["groups"] for r in g["rules"]}


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def dashboard_exprs() -> dict[str, str]:
    out = {}
    for panel in dashboard()["panels"]:
        for target in panel.get("targets", []):
            out[f"{panel['title']}/{target['refId']}"] = target["expr"]
    for variable in dashboard()["templating"]["list"]:
        found = re.fullmatch(r"label_values\((.*), \w+\)", variable.get("query", ""))
        if found:
            out[f"${variable['name']}"] = found.group(1)
    return out


def test_the_metric_name_reader_sees_names_and_only_names() -> None:
    expr = (
        'sum by (cluster) (rate(a_total{code="<error>", x=~"b.*"}[5m])) > 0 unless on (cluster) '
        "histogram_quantile(0.99, sum by (le) (rate(c_bucket[5m]))) and min(d) - time() < 90 * 86400"
    )
    assert metric_names(expr) == {"a_total", "c_bucket", "d"}


@pytest.mark.parametrize("source", ["rules", "dashboard"])
def test_every_metric_used_is_exported_by_the_controller(source: str) -> None:
    exprs = rule_exprs() if source == "rules" else dashboard_exprs()
    known = exported() | SCRAPE_METRICS
    unknown = {where: sorted(metric_names(e) - known) for where, e in exprs.items() if metric_names(e) - known}
    assert unknown == {}
    assert all(metric_names(e) for e in exprs.values())


def test_the_dashboard_shows_what_the_controller_is_operated_by() -> None:
    used = set().union(*(metric_names(e) for e in dashboard_exprs().values()))
    assert used >= {
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds_bucket",
        "workqueue_depth",
        "united_subset_desired_replicas",
        "united_subset_ready_replicas",
        "controller_runtime_webhook_latency_seconds_bucket",
        "united_workloadspread_placements_total",
        "united_member_requests_total",
        "leader_election_master_status",
        "united_webhook_certificate_expiry_timestamp_seconds",
    }
    panels = dashboard()["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    assert all(p["datasource"] == {"type": "prometheus", "uid": "${datasource}"} for p in panels if p["type"] != "row")


def test_there_is_an_alert_for_each_way_the_controller_fails() -> None:
    assert set(rule_exprs()) == {
        "UnitedControllerDown/critical",
        "UnitedControllerNotLeading/critical",
        "UnitedReconcileErrors/warning",
        "UnitedWebhookLatencyNearTimeout/warning",
        "UnitedUnplacedPods/warning",
        "UnitedMemberClusterUnreachable/warning",
        "UnitedWebhookCertificateExpiresSoon/warning",
        "UnitedWebhookCertificateExpiresSoon/critical",
    }


@pytest.fixture(scope="module")
def promtool() -> Path:
    return ensure_tool(PROMTOOL)


def test_promtool_checks_the_rules(promtool: Path) -> None:
    result = subprocess.run([str(promtool), "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rule_exprs())} rules found" in result.stdout + result.stderr


def test_promtool_runs_the_rules_unit_tests(promtool: Path) -> None:
    result = subprocess.run(
        [str(promtool), "test", "rules", str(RULE_TESTS)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr
