"""What the API server serves: a controller for a custom resource starts only once its CRD is
installed and established, and a child kind is used only where it is served."""

from __future__ import annotations

import json

from united.kube.client import KubeClient, Resource
from united.kube.errors import ApiError


async def served(client: KubeClient, resource: Resource) -> bool:
    """The API server serves ``resource`` (its CRD is installed and established)."""
    try:
        text = await client.get_path(f"/apis/{resource.group}/{resource.version}")
    except ApiError:
        return False
    try:
        return any(r.get("name") == resource.plural for r in json.loads(text).get("resources", []))
    except (ValueError, AttributeError):
        return False
