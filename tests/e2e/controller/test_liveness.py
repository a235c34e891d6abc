"""A started controller stays live: nothing it runs once at start (the discovery of the kinds
served, which starts with the first informers) counts as a core loop that ended."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request

import pytest

from tests.support.controller import Controller

pytestmark = pytest.mark.e2e


def healthz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz?verbose", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as failed:
        return failed.code, failed.read().decode()


async def test_the_controller_is_live_after_its_start(controller: Controller) -> None:
    await asyncio.sleep(5)  # past discovery (every 3 s here) and the first informers' sync
    status, body = await asyncio.to_thread(healthz, controller.port)
    assert status == 200, body
