"""The files that ship inside the package: the CRDs, the controller's kustomize manifests and
the sample UnitedDeployments — the single way code reaches them.

The repository's ``crds/`` and ``manifests/`` are the only copies: ``united/data/crds`` and
``united/data/manifests`` are symbolic links to them. A build follows the links, so a wheel
carries the files themselves, and an editable install reads the checkout's. Reading through
``importlib.resources`` rather than the source tree is what makes ``pip install united`` work.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

from united import kustomization
from united.api import yamlload
from united.api.groups import GROUP, KRUISE_GROUP

ROOT: Traversable = files(__name__)
CRDS = ROOT / "crds"
MANIFESTS = ROOT / "manifests"
SAMPLES = MANIFESTS / "samples"
_CRD_DIRS = {GROUP: CRDS, KRUISE_GROUP: CRDS / "compat"}
_PLURALS = {
    GROUP: ("uniteddeployments", "workloadspreads", "clusters"),
    KRUISE_GROUP: ("uniteddeployments", "workloadspreads"),
}
"""Every kind's CRD per group; multi-cluster (``Cluster``) exists only in our group."""


def crd(group: str = GROUP, plural: str = "uniteddeployments") -> Traversable:
    """The CRD of ``plural`` in ``group`` (``apps.kruise.io``: the compat one, for clusters
    without OpenKruise)."""
    return _CRD_DIRS[group] / f"{group}_{plural}.yaml"


def serving(docs: list[dict[str, Any]], crd_name: str, version: str) -> list[dict[str, Any]]:
    """``docs`` with ``version`` of the CRD ``crd_name`` served (that CRD copied, the rest as they
    are); ``LookupError`` when ``docs`` list no such version.

    The compat UnitedDeployment CRD lists ``v1beta1`` unserved, as OpenKruise's releases do: on
    current API servers a served version costs every UnitedDeployment write, used or not
    (``bench/crdcost.py``). Listed, it keeps objects an older install stored in it readable."""
    out, found = [], False
    for doc in docs:
        if doc.get("kind") == "CustomResourceDefinition" and doc["metadata"]["name"] == crd_name:
            versions = [v | {"served": True} if v["name"] == version else v for v in doc["spec"]["versions"]]
            found = found or any(v["name"] == version for v in versions)
            doc = doc | {"spec": doc["spec"] | {"versions": versions}}
        out.append(doc)
    if not found:
        raise LookupError(f"{crd_name} lists no version {version}")
    return out


def crds(group: str = GROUP) -> list[Traversable]:
    """Every kind's CRD in ``group``: UnitedDeployment, WorkloadSpread, then (ours) Cluster."""
    return [crd(group, plural) for plural in _PLURALS[group]]


def controller(group: str = GROUP) -> list[dict[str, Any]]:
    """Everything ``united install`` applies for ``group``, in order: its CRDs, then the
    ``manifests/base`` kustomization rendered (``manifests/kruise`` for apps.kruise.io)."""
    overlay = "kruise" if group == KRUISE_GROUP else "base"
    return documents(*crds(group)) + kustomization.build(MANIFESTS, overlay)


def documents(*paths: Traversable) -> list[dict[str, Any]]:
    """The non-empty YAML documents of ``paths``, in order."""
    return [d for p in paths for d in yamlload.load_all(p.read_text(encoding="utf-8")) if d]


def samples() -> list[str]:
    """The samples' names: their paths under ``manifests/samples`` without ``.yaml``."""
    return sorted(_sample_files())


def sample(name: str) -> Traversable:
    """The sample called ``name`` (``.yaml`` optional); ``LookupError`` names the known ones."""
    found = _sample_files().get(name.removesuffix(".yaml"))
    if found is None:
        raise LookupError(f"no sample {name!r}; known: {', '.join(samples())}")
    return found


def _sample_files(directory: Traversable = SAMPLES, prefix: str = "") -> dict[str, Traversable]:
    found: dict[str, Traversable] = {}
    for entry in directory.iterdir():
        if entry.is_dir():
            found |= _sample_files(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".yaml"):
            found[prefix + entry.name.removesuffix(".yaml")] = entry
    return found
