"""Reading an HTTP answer from a service dsf does not control, within a size cap.

Shared by ``sync`` (a scorer's ``/config``) and ``scorer-check`` (``dsf_compile/conformance.py``);
the agent reads its answers with its own reader, which also budgets memory
(``agent/transport.py``). The body is read chunk by chunk and the read stops as soon as the cap is
passed, so a huge or endless answer costs at most the cap in memory.
"""

from __future__ import annotations

import httpx


class BodyTooLargeError(Exception):
    """The answer is larger than the cap."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"response larger than {limit} bytes")
        self.limit = limit


async def read_capped(response: httpx.Response, limit: int, *, decoded: bool = True) -> bytes:
    """The body of a streamed ``response``; :class:`BodyTooLargeError` past ``limit`` bytes.

    ``decoded`` counts the bytes once a ``Content-Encoding`` is undone (what the caller
    will hold); ``decoded=False`` reads the bytes as sent, for a caller that refused
    every encoding.
    """
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLargeError(limit)
    if response.is_stream_consumed:
        # Only in-memory responses (an injected mock transport) arrive already read.
        if len(response.content) > limit:
            raise BodyTooLargeError(limit)
        return response.content
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes() if decoded else response.aiter_raw():
        size += len(chunk)
        if size > limit:
            raise BodyTooLargeError(limit)
        chunks.append(chunk)
    return b"".join(chunks)
