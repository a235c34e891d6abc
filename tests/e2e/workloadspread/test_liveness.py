"""A controller serving the webhooks stays live: the task that started the webhook server lasts
as long as the server and its certificate loop run (liveness watches it)."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.controller.test_liveness import healthz
from tests.e2e.workloadspread.conftest import Spreading

pytestmark = pytest.mark.e2e


async def test_the_controller_serving_webhooks_is_live(spreading: Spreading) -> None:
    await asyncio.sleep(5)  # past the webhook server's start and a discovery or two
    status, body = await asyncio.to_thread(healthz, spreading.port)
    assert status == 200, body
