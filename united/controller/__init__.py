"""The UnitedDeployment controller: reconciler (domain) and manager (wiring)."""
