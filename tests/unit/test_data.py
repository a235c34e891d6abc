"""The packaged files (``united.data``) are the repository's ``crds/`` and ``manifests/``,
all of them, through the one module that reads them."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from united import data
from united.api.groups import GROUP, KRUISE_GROUP

REPO = Path(__file__).resolve().parents[2]
SHIPPED = ("crds", "manifests")


def _repo_files() -> set[str]:
    return {p.relative_to(REPO).as_posix() for d in SHIPPED for p in (REPO / d).rglob("*") if p.is_file()}


def test_package_data_links_to_the_repository_directories() -> None:
    """One copy: ``united/data/crds`` and ``united/data/manifests`` are links, not duplicates."""
    package = Path(str(data.ROOT))
    for name in SHIPPED:
        assert (package / name).is_symlink(), f"united/data/{name} must link to the repository's {name}/"
        assert (package / name).resolve() == REPO / name


def test_every_repository_file_is_shipped_byte_for_byte() -> None:
    """The wheel gets what pyproject's package-data patterns match: they must match every file
    of crds/ and manifests/ (a .yml or .json added there would otherwise be left out)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["united.data"]
    package = Path(str(data.ROOT))
    matched = {p.relative_to(package).as_posix() for pattern in patterns for p in package.glob(pattern)}
    assert matched == _repo_files()
    for relative in matched:
        assert (data.ROOT / relative).read_bytes() == (REPO / relative).read_bytes()


@pytest.mark.parametrize(
    ("group", "path"),
    [
        (GROUP, "crds/apps.united.io_uniteddeployments.yaml"),
        (KRUISE_GROUP, "crds/compat/apps.kruise.io_uniteddeployments.yaml"),
    ],
)
def test_crd_of_each_group(group: str, path: str) -> None:
    (crd,) = data.documents(data.crd(group))
    assert crd["spec"]["group"] == group
    assert data.crd(group).read_bytes() == (REPO / path).read_bytes()


@pytest.mark.parametrize(("group", "directory"), [(GROUP, "crds"), (KRUISE_GROUP, "crds/compat")])
def test_crds_of_each_group_are_every_kind(group: str, directory: str) -> None:
    """Multi-cluster subsets exist only in our group: its Cluster CRD ships with it alone."""
    plurals = ["uniteddeployments", "workloadspreads"] + (["clusters"] if group == GROUP else [])
    paths = [f"{directory}/{group}_{plural}.yaml" for plural in plurals]
    assert [p.read_bytes() for p in data.crds(group)] == [(REPO / p).read_bytes() for p in paths]
    assert [d["spec"]["names"]["kind"] for d in data.documents(*data.crds(group))] == [
        "UnitedDeployment",
        "WorkloadSpread",
        *(["Cluster"] if group == GROUP else []),
    ]


def test_samples_are_every_sample_file_by_name() -> None:
    files = sorted((REPO / "manifests" / "samples").rglob("*.yaml"))
    names = [p.relative_to(REPO / "manifests" / "samples").as_posix().removesuffix(".yaml") for p in files]
    assert data.samples() == sorted(names)
    assert "hpa/uniteddeployment-hpa" in names
    for name, path in zip(sorted(names), sorted(files), strict=True):
        assert data.sample(name).read_bytes() == path.read_bytes()
        assert data.sample(f"{name}.yaml").read_bytes() == path.read_bytes()


def test_unknown_sample_names_the_known_ones() -> None:
    with pytest.raises(LookupError, match=r"no sample 'zones'; known: arch-patch, .*zones-percent"):
        data.sample("zones")


def test_controller_is_the_crds_then_the_base_kustomization() -> None:
    docs = data.controller(GROUP)
    assert [d["kind"] for d in docs] == [
        "CustomResourceDefinition",
        "CustomResourceDefinition",
        "CustomResourceDefinition",
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
        "Service",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ]
    assert [(d["spec"]["group"], d["spec"]["names"]["kind"]) for d in docs[:3]] == [
        (GROUP, "UnitedDeployment"),
        (GROUP, "WorkloadSpread"),
        (GROUP, "Cluster"),
    ]
    assert all(d["metadata"]["namespace"] == "united-system" for d in docs if d["kind"] in ("Role", "Deployment"))


def test_controller_for_kruise_is_the_compat_crd_and_the_kruise_overlay() -> None:
    docs = data.controller(KRUISE_GROUP)
    crds = [d["spec"]["group"] for d in docs if d["kind"] == "CustomResourceDefinition"]
    assert crds == [KRUISE_GROUP, KRUISE_GROUP]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["args"][-1] == f"--api-group={KRUISE_GROUP}"
    assert {"united-controller", "united-controller-kruise"} <= {
        d["metadata"]["name"] for d in docs if d["kind"] == "ClusterRole"
    }
