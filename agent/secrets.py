"""Bearer tokens from Secrets: the managed cluster's API or a mounted Secret directory.

A token is registered with the log redactor the moment it is read; it is only ever put
in an ``Authorization`` header.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import time
from pathlib import Path
from typing import Protocol

from agent.errors import Reason, SecretMissingError
from agent.kube import ManagedClusterApi, RawResponse, api_budget, read_bounded
from agent.logs import REDACTOR, Redactor
from dsf_contract.failures import ApiFailure, api_status_reason
from dsf_contract.fields import DNS_SUBDOMAIN_RE, SECRET_KEY_RE


class SecretStore(Protocol):
    """Where tokens come from."""

    async def token(self, name: str, key: str) -> str:
        """The value of ``key`` in Secret ``name``; :class:`SecretMissingError` when absent."""
        ...


def _check_reference(name: str, key: str) -> None:
    # Names become file paths (--secrets-dir): refuse anything that is not a plain name.
    if not DNS_SUBDOMAIN_RE.match(name) or len(name) > 253:
        raise SecretMissingError(f"invalid Secret name {name!r}", reason=Reason.INVALID_REFERENCE)
    if not SECRET_KEY_RE.match(key) or key in (".", "..") or len(key) > 253:
        raise SecretMissingError(
            f"invalid key {key!r} of Secret {name!r}", reason=Reason.INVALID_REFERENCE
        )


class DirSecretStore:
    """Secrets mounted as files: ``DIR/<secret-name>/<key>`` (a Secret volume per directory).

    Read on every use: a mounted Secret is updated in place by the kubelet, and reading a
    tiny local file costs microseconds.
    """

    def __init__(self, root: Path, *, redactor: Redactor = REDACTOR) -> None:
        self._root = root
        self._redactor = redactor

    async def token(self, name: str, key: str) -> str:
        """See :meth:`SecretStore.token`."""
        _check_reference(name, key)
        path = self._root / name / key
        try:
            value = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise SecretMissingError(
                f"Secret {name!r} key {key!r} not found", reason=ApiFailure.NOT_FOUND
            ) from None
        except (OSError, UnicodeDecodeError) as err:
            raise SecretMissingError(
                f"Secret {name!r} key {key!r} unreadable ({type(err).__name__})",
                reason=Reason.UNREADABLE,
            ) from None
        if not value:
            raise SecretMissingError(f"Secret {name!r} key {key!r} is empty", reason=Reason.EMPTY)
        self._redactor.add(value)
        return value


class ApiSecretStore:
    """Secrets read through the managed cluster's API (``CoreV1Api``), cached briefly.

    Found Secrets are kept ``ttl`` seconds (so rotation is picked up) and served stale while
    the API is unreachable; a missing one is asked for again after ``missing_ttl`` seconds,
    so a scorer starts soon after its Secret appears.
    """

    def __init__(
        self,
        core_api: ManagedClusterApi,
        namespace: str,
        *,
        ttl: float = 30.0,
        missing_ttl: float = 5.0,
        timeout: float = 10.0,
        redactor: Redactor = REDACTOR,
    ) -> None:
        self._api, self._namespace = core_api, namespace
        self._ttl, self._missing_ttl, self._timeout = ttl, missing_ttl, timeout
        self._redactor = redactor
        self._cache: dict[str, tuple[float, dict[str, str] | None, str]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def token(self, name: str, key: str) -> str:
        """See :meth:`SecretStore.token`."""
        _check_reference(name, key)
        data = await self._data(name)
        value = data.get(key)
        if not value:
            raise SecretMissingError(
                f"Secret {name!r} has no key {key!r}", reason=Reason.KEY_NOT_FOUND
            )
        return value

    async def _data(self, name: str) -> dict[str, str]:
        async with self._locks.setdefault(name, asyncio.Lock()):
            now = time.monotonic()
            cached = self._cache.get(name)
            if cached is not None:
                fetched, data, reason = cached
                fresh = self._ttl if data is not None else self._missing_ttl
                if now - fetched < fresh:
                    return self._known(name, data, reason)
            try:
                data, reason = await asyncio.to_thread(self._read, name)
            except Exception as err:  # the API client raises many types; all mean "unavailable"
                if cached is not None and cached[1] is not None:
                    return cached[1]
                raise SecretMissingError(
                    f"Secret {name!r} unavailable ({type(err).__name__})", reason=Reason.API_ERROR
                ) from None
            self._cache[name] = (now, data, reason)
            return self._known(name, data, reason)

    @staticmethod
    def _known(name: str, data: dict[str, str] | None, reason: str) -> dict[str, str]:
        if data is None:
            raise SecretMissingError(f"Secret {name!r} not readable ({reason})", reason=reason)
        return data

    def _read(self, name: str) -> tuple[dict[str, str] | None, str]:
        from kubernetes.client.exceptions import ApiException

        def call() -> RawResponse:
            response: RawResponse = self._api.read_namespaced_secret(
                name, self._namespace, _preload_content=False, _request_timeout=self._timeout
            )
            return response

        try:  # a whole-request deadline and a cap on the answer (agent/kube.py)
            body = read_bounded(call, api_budget(f"Secret {name}", self._timeout))
        except ApiException as err:
            if err.status in (403, 404):
                return None, api_status_reason(err.status)
            raise
        document = json.loads(body)
        data: dict[str, str] = {}
        for key, encoded in (document.get("data") or {}).items():
            try:
                value = base64.b64decode(encoded, validate=True).decode("utf-8").strip()
            except (binascii.Error, UnicodeDecodeError, TypeError):
                continue
            self._redactor.add(value)
            data[key] = value
        return data, ""
