"""The API groups served: this project's own, and OpenKruise's, whose manifests work unchanged."""

GROUP = "apps.united.io"
KRUISE_GROUP = "apps.kruise.io"
