"""The API groups served: this project's own, and OpenKruise's, whose manifests work unchanged."""

GROUP = "apps.united.io"
KRUISE_GROUP = "apps.kruise.io"
KRUISE_UD_CRD = f"uniteddeployments.{KRUISE_GROUP}"
"""The compat UnitedDeployment CRD: ``v1alpha1`` served and stored, ``v1beta1`` listed, served only
on request (``united install --kruise-v1beta1``)."""
