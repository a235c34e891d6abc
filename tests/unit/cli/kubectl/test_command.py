"""``kubectl-united``'s flags, names and usage errors (the cluster calls are e2e-tested)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from united.api.field import ManifestError
from united.cli.kubectl.command import EXIT_FAILURE, EXIT_USAGE, main, parser, target
from united.cli.kubectl.connection import context_namespace, duration, kubeconfig_path

SAMPLE = Path(__file__).resolve().parents[4] / "manifests" / "samples" / "zones-percent.yaml"


def test_connection_flags_work_before_and_after_the_subcommand() -> None:
    before = parser().parse_args(["-n", "shop", "--context", "c1", "rollout", "status", "web"])
    after = parser().parse_args(["rollout", "status", "web", "-n", "shop", "--context", "c1"])
    for args in (before, after):
        assert (args.namespace, args.context, args.name, args.verb) == ("shop", "c1", "web", "status")
    assert parser().parse_args(["status", "web"]).namespace is None


def test_rollout_status_accepts_kubectls_watch_false() -> None:
    assert parser().parse_args(["rollout", "status", "web", "--watch=false"]).watch is False
    assert parser().parse_args(["rollout", "status", "web"]).watch is True


@pytest.mark.parametrize("argv", [[], ["rollout"], ["rollout", "stop", "web"], ["status"], ["plan"]])
def test_bad_usage_exits_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == EXIT_USAGE


def test_targets_take_kubectls_type_slash_name() -> None:
    assert target("web", group="apps.united.io")[0].plural == "uniteddeployments"
    ws, name = target("ws/spread", group="apps.united.io")
    assert (ws.plural, ws.group, ws.version, name) == ("workloadspreads", "apps.united.io", "v1alpha1", "spread")
    kruise, _ = target("uniteddeployments.apps.kruise.io/web", group="apps.united.io")
    assert (kruise.group, kruise.version) == ("apps.kruise.io", "v1alpha1")
    with pytest.raises(ManifestError, match='NAME: Invalid value: "pods/x"'):
        target("pods/x", group="apps.united.io")


def test_usage_errors_print_field_lines_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rollout", "status", "web", "--timeout", "soon"]) == EXIT_USAGE
    assert capsys.readouterr().err == '--timeout: Invalid value: "soon": must be a duration such as 30s, 5m or 1h30m\n'
    assert main(["rollout", "pause", "ws/spread"]) == EXIT_USAGE
    assert "rollouts are a UnitedDeployment's" in capsys.readouterr().err
    assert main(["rollout", "restart", "ws/spread"]) == EXIT_USAGE
    assert "rollouts are a UnitedDeployment's" in capsys.readouterr().err
    assert main(["rollout", "history", "web", "--revision", "-1"]) == EXIT_USAGE
    assert capsys.readouterr().err == "--revision: Invalid value: -1: must be 0 (all) or more\n"


def test_restart_and_history_take_kubectls_arguments() -> None:
    restart = parser().parse_args(["rollout", "restart", "web", "-n", "shop"])
    assert (restart.verb, restart.name, restart.namespace) == ("restart", "web", "shop")
    history = parser().parse_args(["rollout", "history", "web", "--revision", "3"])
    assert (history.verb, history.name, history.revision) == ("history", "web", 3)
    assert parser().parse_args(["rollout", "history", "web"]).revision == 0


def test_durations_are_go_durations_or_seconds() -> None:
    assert duration("1h30m", "--timeout") == 5400
    assert duration("90", "--timeout") == 90
    assert duration("1.5s", "--timeout") == 1.5
    assert duration("250ms", "--timeout") == 0.25
    with pytest.raises(ManifestError):
        duration("5m3", "--timeout")


def write_config(path: Path, *, current: str = "a") -> None:
    contexts = [
        {"name": "a", "context": {"cluster": "c", "user": "u", "namespace": "team-a"}},
        {"name": "b", "context": {"cluster": "c", "user": "u"}},
    ]
    path.write_text(yaml.safe_dump({"current-context": current, "contexts": contexts}))


def test_namespace_defaults_to_the_contexts(tmp_path: Path) -> None:
    config = tmp_path / "config"
    write_config(config)
    assert context_namespace(str(config), None) == "team-a"
    assert context_namespace(str(config), "b") == "default"
    assert context_namespace(str(tmp_path / "missing"), None) == "default"


def test_kubeconfig_path_is_kubectls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path}/one:{tmp_path}/two")
    assert kubeconfig_path("flag") == "flag"
    assert kubeconfig_path(None) == f"{tmp_path}/one"


def test_a_broken_kubeconfig_is_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "web", "--kubeconfig", str(tmp_path / "nope")]) == EXIT_FAILURE
    assert capsys.readouterr().err == f"error: kubeconfig {tmp_path / 'nope'}: no such file\n"


def test_plan_is_united_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "-f", str(SAMPLE), "--replicas", "5", "-o", "json"]) == 0
    out = capsys.readouterr().out
    assert '"replicas": 5' in out and '"name": "zone-a"' in out


def test_an_unreachable_server_is_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The client's retries are logged at debug level: not shown to a kubectl user."""
    config = tmp_path / "config"
    config.write_text(
        yaml.safe_dump(
            {
                "current-context": "c",
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        )
    )
    assert main(["status", "web", "--kubeconfig", str(config)]) == EXIT_FAILURE
    out, err = capsys.readouterr()
    assert (out, err) == ("", "Unable to connect to the server: cannot reach http://127.0.0.1:1: connection refused\n")
