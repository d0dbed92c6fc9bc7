"""The cookie jar of every httpx client dsf makes (:func:`dsf_transport.http.new_client`),
apart so that ``http.cookiejar`` loads only with httpx."""

from __future__ import annotations

from http.cookiejar import CookieJar
from typing import Any


class NoCookies(CookieJar):
    """A jar that keeps nothing: storing one API's cookies (http.cookiejar parses every
    response) cost the agent more than the rest of the client."""

    def extract_cookies(self, response: Any, request: Any) -> None:
        """Keep no cookie."""
        return None
