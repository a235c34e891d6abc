"""The crdcost scenario's pure parts: the CRD copies, the summary and its rows in the report."""

from __future__ import annotations

from bench.crdcost import VARIANTS, summary, variants
from bench.report import render
from united import data
from united.api.crdrules import RULES
from united.api.groups import KRUISE_GROUP


def installed() -> dict[str, object]:
    (crd,) = data.documents(data.crd(KRUISE_GROUP))
    return crd


def test_each_copy_lives_in_a_group_of_its_own_and_differs_in_one_declaration() -> None:
    crd = installed()
    copies = variants(crd)
    assert list(copies) == list(VARIANTS) == ["as installed", "v1beta1 served", "no CEL rules"]
    groups = [c["spec"]["group"] for c in copies.values()]
    assert len(set(groups)) == 3 and KRUISE_GROUP not in groups
    for c in copies.values():
        assert c["metadata"] == {"name": f"uniteddeployments.{c['spec']['group']}"}

    def served(c: dict[str, object]) -> list[bool]:
        return [v["served"] for v in c["spec"]["versions"]]  # type: ignore[index]

    assert served(copies["as installed"]) == served(copies["no CEL rules"]) == [True, False]
    assert served(copies["v1beta1 served"]) == [True, True]
    assert RULES in str(copies["as installed"]) and RULES in str(copies["v1beta1 served"])
    assert RULES not in str(copies["no CEL rules"])
    same = {k: v for k, v in copies["as installed"]["spec"].items() if k != "group"}
    assert same == {k: v for k, v in crd["spec"].items() if k != "group"}  # type: ignore[union-attr]
    assert crd["spec"]["group"] == KRUISE_GROUP, "the installed CRD is left as it was"  # type: ignore[index]


def test_the_summary_compares_each_copy_and_write_with_the_installed_copy() -> None:
    samples = {
        ("as installed", "scale"): [6.0, 6.2, 6.4],
        ("as installed", "status"): [7.0, 7.0, 7.0],
        ("v1beta1 served", "scale"): [6.5, 6.6, 6.7],
        ("v1beta1 served", "status"): [7.7, 7.7, 7.7],
    }
    cpu = {("as installed", "scale"): 30.0, ("as installed", "status"): 30.0,
           ("v1beta1 served", "scale"): 36.0, ("v1beta1 served", "status"): 0.0}  # fmt: skip
    out = summary(samples, cpu)
    scale = out["v1beta1 served"]["scale"]
    assert scale["p50_ms"] == 6.6 and scale["writes"] == 3
    assert round(scale["ratio_p50"], 4) == round(6.6 / 6.2, 4)
    assert round(scale["added_p50_ms"], 4) == 0.4
    assert (scale["server_cpu_ms_per_write"], scale["ratio_cpu"]) == (12.0, 1.2)
    assert out["as installed"]["status"]["ratio_p50"] == 1.0
    assert out["v1beta1 served"]["status"]["ratio_cpu"] == 0.0
    table = render({"crdcost": {"rounds": 3, "objects": 5, "copies": out}, "machine": {"cpus": 2}})
    assert "| CRD declarations (3 rounds, 5 UDs a copy) |" in table
    assert (
        "| scale write → watch p50 / p90, API server + etcd CPU per write: v1beta1 served "
        "| 6.60 / 6.76 ms; 12.0 ms | 6.20 / 6.52 ms; 10.0 ms (as installed) | 1.06x (+0.40 ms); CPU 1.20x |" in table
    )
