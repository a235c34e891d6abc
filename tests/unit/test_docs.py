"""The documentation site (``docs/``, ``mkdocs.yml``) and the README that points into it.

The site is built with ``mkdocs build --strict`` here, so the README's test command fails on a
dead link or anchor, on a page left out of the navigation, and on a CRD field table that cannot
be rendered; the CRD tables are rendered from ``crds/`` at build time, so they cannot drift.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CRD_PAGE = DOCS / "reference" / "crd-fields.md"


def _crd_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("crd_reference", ROOT / "scripts" / "crd_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(config_dir: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=config_dir,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(site.parent)},
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    built = _build(ROOT, out)
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def test_the_site_builds_strict_with_the_crd_tables_rendered(site: Path) -> None:
    page = (site / "reference" / "crd-fields" / "index.html").read_text(encoding="utf-8")
    assert "<!-- crd-fields" not in page
    for field in (
        "spec.topology.subsets[].weight",
        "spec.kubeconfigSecretRef.namespace",
        "status.versionedSubsetStatuses",
        "spec.updateStrategy.progressive.waves[].pause.duration",
    ):
        assert f"<code>{field}</code>" in page, field
    assert (site / "performance" / "index.html").is_file()


def test_a_dead_anchor_fails_the_build(tmp_path: Path) -> None:
    """--strict really catches a dead link: the same tree with one broken anchor does not build."""
    for name in ("docs", "crds", "scripts"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "getting-started.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n[gone](reference/cli.md#no-such-heading)\n", encoding="utf-8")
    built = _build(tmp_path, tmp_path / "site")
    assert built.returncode != 0
    assert "no-such-heading" in built.stdout + built.stderr


def _schema_paths(node: dict[str, Any], path: str = "") -> set[str]:
    """Every field path of a schema, walked independently of the renderer."""
    found = {path} if path else set()
    for name, child in node.get("properties", {}).items():
        if path or name not in ("apiVersion", "kind", "metadata"):
            found |= _schema_paths(child, f"{path}.{name}" if path else name)
    items = node.get("items")
    if isinstance(items, dict) and "properties" in items:
        found |= {p for p in _schema_paths(items, f"{path}[]") if p != f"{path}[]"}
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and "properties" in extra:
        found |= {p for p in _schema_paths(extra, f"{path}{{key}}") if p != f"{path}{{key}}"}
    return found


CRD_FILES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "crds").rglob("*.yaml"))


@pytest.mark.parametrize("crd_file", CRD_FILES)
def test_every_field_of_every_crd_has_a_row(crd_file: str) -> None:
    rendered = _crd_reference().render_file(crd_file)
    rows = set(re.findall(r"^\| `([^`]+)` \|", rendered, re.MULTILINE))
    for document in yaml.safe_load_all((ROOT / crd_file).read_text(encoding="utf-8")):
        for version in document["spec"]["versions"]:
            paths = _schema_paths(version["schema"]["openAPIV3Schema"])
            assert paths and paths <= rows, sorted(paths - rows)[:10]


def test_the_crd_page_names_every_crd() -> None:
    """A new CRD in crds/ cannot be left out of the reference pages."""
    named = set(_crd_reference().MARKER.findall(CRD_PAGE.read_text(encoding="utf-8")))
    assert named == set(CRD_FILES)


def test_the_tables_render_schema_rules() -> None:
    crd = {
        "spec": {
            "group": "example.io",
            "names": {"kind": "Thing"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "required": ["mode"],
                                    "properties": {
                                        "mode": {"type": "string", "enum": ["A", ""], "description": "a | b"},
                                        "size": {"x-kubernetes-int-or-string": True, "default": "25%"},
                                        "items": {
                                            "type": "array",
                                            "maxItems": 3,
                                            "items": {
                                                "type": "object",
                                                "properties": {
                                                    "n": {"type": "integer", "format": "int32", "minimum": 0}
                                                },
                                            },
                                        },
                                    },
                                }
                            }
                        }
                    },
                },
                {"name": "v0", "served": False, "schema": {"openAPIV3Schema": {}}},
            ],
        }
    }
    text = _crd_reference().render(crd)
    assert "### Thing `example.io/v1` (served, stored)" in text and "v0" not in text
    assert '| `spec.mode` | string | required; one of `A`, `""` | a \\| b |' in text
    assert '| `spec.size` | int-or-string | default `"25%"` |' in text
    assert "| `spec.items` | []object | at most 3 items |" in text
    assert "| `spec.items[].n` | integer (int32) | ≥ 0 |" in text


def test_the_metrics_page_lists_every_metric() -> None:
    source = (ROOT / "united" / "runtime" / "metrics.py").read_text(encoding="utf-8")
    names = set(re.findall(r'"((?:controller_runtime|workqueue|rest_client|united|leader_election)_[a-z_]+)"', source))
    page = (DOCS / "reference" / "metrics.md").read_text(encoding="utf-8")
    assert len(names) > 15
    assert sorted(n for n in names if f"`{n}`" not in page) == []


README = ROOT / "README.md"


def test_the_readme_is_a_front_door_with_the_start_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    for command in (
        "pip install united",
        "united demo",
        ".venv/bin/python -m pytest",
        "python3 -m venv .venv && .venv/bin/pip install -e '.[dev]'",
    ):
        assert command in text, command


def test_the_readme_links_resolve() -> None:
    """Relative links of the README name files of the repository (docs pages among them)."""
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    local = [t for t in targets if "://" not in t]
    assert any(t.startswith("docs/") for t in local)
    assert [t for t in local if not (ROOT / t).exists()] == []


# Words about how the work was organised, not about the project: numbered work periods,
# tracker numbers, work streams, numbered CI runs, and sections, findings or files of documents
# outside the repository.
_ORGANISATION = re.compile(
    r"\b[Ss]ession \d|\b[Ii]ssue #?\d|\b[Ss]tream [A-Z]\b|\bCI\d\b|\b[Rr]eference \d|shared/reference"
    r"|\bEDGE-\d|\bBUG-\d|\b[Bb]ugs? \d|kruise-[a-z]+\.md|\bsections? \d|§ ?\d"
)


@pytest.mark.parametrize("tree", ["docs", "united", "tests", "bench", "scripts", "README.md", "mkdocs.yml"])
def test_no_words_about_how_the_work_was_organised(tree: str) -> None:
    base = ROOT / tree
    files = [base] if base.is_file() else [p for p in base.rglob("*") if p.suffix in (".py", ".md", ".yaml", ".yml")]
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _ORGANISATION.search(line)
    ]
    assert hits == []
