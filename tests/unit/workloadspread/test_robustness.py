"""Whatever a manifest holds, admission answers with field errors, never an exception: the CLI
must not print a traceback and the controller must keep serving everyone else."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.workloadspread.test_validation import base
from united.api.field import ManifestError
from united.workloadspread.admission import admit
from united.workloadspread.conversion import convert
from united.workloadspread.model import KRUISE_ALPHA, KRUISE_BETA

keys = st.sampled_from(
    ["name", "key", "operator", "values", "weight", "preference", "matchExpressions", "matchFields", "metadata",
     "spec", "containers", "labels", "effect", "value", "tolerationSeconds", "$patch", "image", "volumeMounts",
     "maxReplicas", "minReplicas", "type", "adaptive", "rescheduleCriticalSeconds", "selector", "matchLabels"]
)  # fmt: skip
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 200),
    st.floats(allow_nan=False),
    st.sampled_from(["", "In", "NotIn", "Exists", "Gt", "Lt", "Equal", "50%", "x", "NoExecute", "replace", "Always"]),
)
values = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(keys, c, max_size=4), max_leaves=12)
FIELDS = ["requiredNodeSelector", "preferredNodeSelector", "tolerations", "patch", "maxReplicas", "minReplicas", "name"]


def _admit(doc: Any) -> None:
    try:
        admit(doc)
    except ManifestError as e:
        assert e.errors and all(str(x) for x in e.errors)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(st.sampled_from(FIELDS), values, max_size=4), max_size=3), values, values)
def test_any_subsets_strategy_and_filter_give_field_errors(subsets: list[Any], strategy: Any, selector: Any) -> None:
    doc = base()
    doc["spec"]["subsets"] = subsets
    doc["spec"]["scheduleStrategy"] = strategy
    doc["spec"]["targetFilter"] = {"selector": selector}
    _admit(doc)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(FIELDS), values)
def test_any_value_in_a_valid_kruise_manifest_gives_field_errors(field: str, value: Any) -> None:
    doc = convert(base(KRUISE_BETA), KRUISE_ALPHA)
    doc["spec"]["subsets"][0][field] = value
    _admit(doc)


requirement = st.fixed_dictionaries({}, optional={"key": values, "operator": values, "values": values})
term = st.fixed_dictionaries(
    {},
    optional={
        "matchExpressions": st.lists(requirement | values, max_size=2) | values,
        "matchFields": st.lists(requirement, max_size=2) | values,
    },
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.fixed_dictionaries({}, optional={"weight": values, "preference": term | values}) | values, max_size=2)
)
def test_any_preferred_terms_give_field_errors(preferred: Any) -> None:
    doc = base()
    doc["spec"]["subsets"][0]["preferredNodeSelector"] = preferred
    _admit(doc)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "metadata": values,
            "spec": st.fixed_dictionaries(
                {},
                optional={
                    "containers": st.lists(st.dictionaries(keys, values, max_size=4) | values, max_size=2) | values,
                    "tolerations": values,
                    "restartPolicy": values,
                },
            ),
        },
    )
)
def test_any_patch_gives_field_errors(patch: Any) -> None:
    doc = base()
    doc["spec"]["subsets"][0]["patch"] = patch
    _admit(doc)
