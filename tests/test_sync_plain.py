"""Sync's plain-http GETs carry its client's headers, and a plain fleet's sync never loads
httpx (its URLs are read by ``dsf_transport/plain_target.py``, ``tests/test_plain_target.py``)."""

from __future__ import annotations

import subprocess
import sys

from dsf_compile.inputs.sync_settings import SyncSettings
from dsf_compile.sync.client import FIELDS, _new_client


def test_plain_gets_carry_the_clients_headers_in_its_order() -> None:
    client = _new_client(SyncSettings(), {}, None, None)
    assert tuple(client.headers.raw) == FIELDS


_PLAIN_SYNC = """
import asyncio, sys
from dsf_compile.sync.fetch import sync_lock
from dsf_compile.sync.lock import Lockfile
from tests.sync_fleet import CONFIG, FAST, scorer
from tests.sync_servers import LoopbackServer, json_body
with LoopbackServer() as server:
    url = server.route("/config", json_body(CONFIG))
    fetched = asyncio.run(sync_lock([scorer("s", url + "?n=1")], Lockfile(), FAST))
assert fetched.lock.scorers["s"].health == "Active", fetched.lock.scorers["s"]
print("httpx" in sys.modules)
"""


def test_a_plain_fleets_sync_does_not_load_httpx() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PLAIN_SYNC], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"
