"""The one name for a decoded JSON object: what the API server sends, what the controller writes,
and every manifest the command line reads."""

from typing import Any

Json = dict[str, Any]
