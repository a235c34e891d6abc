"""The WorkloadSpread tests run against the session's controller (``tests/e2e/conftest.py``):
``united run`` as deployed, serving the pod webhooks at ``https://127.0.0.1:PORT`` under the
shipped roles. One process serves the webhooks and reconciles the spreads, as in a cluster:
two that saw the webhook's bookings differently would rewrite each other's status conditions
at event speed, and bookings would conflict until a pod was admitted unplaced. The tests
restart it (same webhook port) where they are about restarts."""

from __future__ import annotations

from tests.support.controller import WebhookController

Spreading = WebhookController
"""What the ``spreading`` fixture yields: ``webhook_port``, ``url``, ``port`` (/metrics, /readyz),
``log_path``, ``extra`` and the process controls of :class:`~tests.support.controller.Controller`."""
