"""The kustomize subset that renders the shipped overlays (its equality with ``kubectl
kustomize`` on the real overlays is checked in tests/e2e/test_packaging.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from united.kustomization import KustomizationError, build

ROLE = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n"
DEPLOYMENT = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1}\n"
SERVICE_ACCOUNT = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: s}\n---\n"


def _tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def test_resources_in_order_and_the_namespace_on_namespaced_objects_only(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "base/kustomization.yaml": "namespace: ns\nresources: [role.yaml, sa.yaml, d.yaml]\n",
            "base/role.yaml": ROLE,
            "base/sa.yaml": SERVICE_ACCOUNT,
            "base/d.yaml": DEPLOYMENT,
        },
    )
    objects = build(root, "base")
    assert [(o["kind"], o["metadata"].get("namespace")) for o in objects] == [
        ("ClusterRole", None),
        ("ServiceAccount", "ns"),
        ("Deployment", "ns"),
    ]


def test_an_overlay_patches_its_base_and_adds_resources(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "base/kustomization.yaml": "namespace: ns\nresources: [d.yaml]\n",
            "base/d.yaml": DEPLOYMENT,
            "over/kustomization.yaml": (
                "bases: [../base]\nresources: [role.yaml]\npatchesJson6902:\n"
                "- target: {group: apps, version: v1, kind: Deployment, name: d, namespace: ns}\n  path: p.yaml\n"
            ),
            "over/role.yaml": ROLE,
            "over/p.yaml": "- {op: replace, path: /spec/replicas, value: 3}\n",
        },
    )
    objects = build(root, "over")
    assert [o["kind"] for o in objects] == ["Deployment", "ClusterRole"]
    assert objects[0]["spec"]["replicas"] == 3
    assert build(root, "base")[0]["spec"]["replicas"] == 1


@pytest.mark.parametrize(
    ("kustomization", "message"),
    [
        ("resources: [d.yaml]\nimages: [{name: x}]\n", "unsupported fields images"),
        ("resources: [../../elsewhere]\n", "outside the shipped files"),
        (
            "resources: [d.yaml]\npatchesJson6902:\n"
            "- target: {version: v1, kind: Deployment, name: d}\n  path: p.yaml\n",
            "matches 0 objects, not 1",
        ),
    ],
)
def test_what_it_cannot_render_exactly_is_refused(tmp_path: Path, kustomization: str, message: str) -> None:
    root = _tree(tmp_path, {"k/kustomization.yaml": kustomization, "k/d.yaml": DEPLOYMENT, "k/p.yaml": "[]\n"})
    with pytest.raises(KustomizationError, match=message):
        build(root, "k")
