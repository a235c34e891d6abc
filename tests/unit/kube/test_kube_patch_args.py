"""Client-side argument checks that stop a bad request before it is sent."""

from typing import Any

import pytest

from united.kube.client import CLONE_SETS, KubeClient, PatchType


@pytest.mark.parametrize(
    ("body", "kwargs", "match"),
    [
        ({"spec": {}}, {"patch_type": PatchType.JSON}, "list of operations"),
        ([{"op": "add", "path": "/x", "value": 1}], {"patch_type": PatchType.MERGE}, "take a dict"),
        ({"spec": {}}, {"patch_type": PatchType.APPLY}, "field_manager"),
        ({"spec": {}}, {"patch_type": PatchType.MERGE, "force": True}, "force"),
    ],
)
async def test_inconsistent_patches_are_refused(body: Any, kwargs: dict[str, Any], match: str) -> None:
    # Port 9 (discard) on loopback: nothing is ever sent, the checks come first.
    async with KubeClient.for_server("https://127.0.0.1:9") as client:
        with pytest.raises(ValueError, match=match):
            await client.patch(CLONE_SETS, "x", body, namespace="ns", **kwargs)


async def test_unknown_propagation_policy_is_refused() -> None:
    async with KubeClient.for_server("https://127.0.0.1:9") as client:
        with pytest.raises(ValueError, match="propagation"):
            await client.delete(CLONE_SETS, "x", namespace="ns", propagation_policy="Later")
