"""YAML from users is loaded with bounded alias expansion and nesting (:mod:`united.api.yamlload`)."""

from __future__ import annotations

import itertools
import tracemalloc
from pathlib import Path

import pytest
import yaml

from united.api import decode, yamlload
from united.api.field import ManifestError
from united.cli import manifest
from united.kube import kubeconfig
from united.kube.errors import ConfigError


def bomb() -> str:
    """The classic "billion laughs": each anchor a list of nine aliases of the previous one."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in itertools.pairwise("abcdefghi"):
        lines.append(f"{name}: &{name} [{','.join([f'*{prev}'] * 9)}]")
    return "\n".join(lines) + "\n"


def manifest_bomb() -> str:
    body = bomb().replace("\n", "\n    ")
    return f"apiVersion: apps.united.io/v1alpha1\nkind: UnitedDeployment\nmetadata:\n  name: x\nspec:\n  x:\n    {body}"


def test_the_bomb_is_small_and_refused_within_bounded_memory() -> None:
    text = manifest_bomb()
    assert len(text) < 600
    tracemalloc.start()
    try:
        with pytest.raises(ManifestError) as caught:
            manifest.load_documents(text, name="bomb.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(f"peak {peak} bytes")
    assert peak < 2 * 1024 * 1024
    [error] = caught.value.errors
    assert error.field == "bomb.yaml"
    assert error.message.startswith("invalid YAML at line ")
    assert error.message.endswith(f": aliases expand to more than {yamlload.MAX_ALIAS_EXPANSION} bytes")


def test_ordinary_aliases_still_load() -> None:
    text = "env: &env [{name: A, value: '1'}]\nfirst: {env: *env}\nsecond: {env: *env}\n"
    loaded = yamlload.load(text)
    assert loaded["first"] == loaded["second"] == {"env": [{"name": "A", "value": "1"}]}


def test_expansion_is_counted_exactly() -> None:
    """A scalar weighs its length plus one: one alias of a value at the budget passes, a second
    one does not."""
    value = "x" * (yamlload.MAX_ALIAS_EXPANSION - 1)
    assert yamlload.load(f"a: &a {value}\nb: *a\n")["b"] == value
    with pytest.raises(yaml.YAMLError, match="aliases expand to more than"):
        yamlload.load(f"a: &a {value}\nb: *a\nc: *a\n")


def test_expansion_is_counted_across_the_documents_of_a_stream() -> None:
    value = "x" * (yamlload.MAX_ALIAS_EXPANSION // 2 - 1)
    document = f"a: &a {value}\nb: *a\n"
    assert len(yamlload.load_all(document + "---\n" + document)) == 2
    with pytest.raises(yaml.YAMLError, match="aliases expand to more than"):
        yamlload.load_all("---\n".join([document] * 3))


def test_a_self_referencing_alias_is_refused() -> None:
    with pytest.raises(yaml.YAMLError, match=r"alias \*a refers to its own anchor"):
        yamlload.load("a: &a [1, *a]\n")
    with pytest.raises(yaml.YAMLError, match=r"alias \*m refers to its own anchor"):
        yamlload.load("m: &m {self: *m}\n")


def test_nesting_is_bounded_at_the_decoders_depth() -> None:
    deepest = "[" * decode.MAX_DEPTH + "]" * decode.MAX_DEPTH
    assert decode.within(yamlload.load(deepest))
    with pytest.raises(yaml.YAMLError, match="nested deeper than 100 levels"):
        yamlload.load("[" * (decode.MAX_DEPTH + 1) + "]" * (decode.MAX_DEPTH + 1))
    with pytest.raises(ManifestError, match="nested deeper"):
        manifest.load_documents("a: " + "[" * 5000, name="deep.yaml")


def test_state_files_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "state.yaml"
    path.write_text(bomb())
    with pytest.raises(ManifestError, match="aliases expand"):
        manifest.load_state(str(path))


def test_kubeconfigs_are_bounded() -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        kubeconfig.parse(bomb(), "kubeconfig bomb")
