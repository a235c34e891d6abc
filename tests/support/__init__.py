"""What the tests need and the product does not ship: the API fault proxy, the use of an
existing cluster instead of the local control plane, and running as an unprivileged user."""
