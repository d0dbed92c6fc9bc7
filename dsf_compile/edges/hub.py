"""Reading a hub (as kubectl finds it, :class:`HubAccess`): list calls only, bounded in
pages, items, bytes and time.

``explain`` (``--verify`` too), ``optimize``, ``dsf-mcp`` and ``sync --clusters`` read a
hub through the official ``kubernetes`` client. Its answers are untrusted (a broken or hostile API server,
or anything on the path), so every list is paged (``hub.pageSize``) and stops with an error
at ``hub.maxPages`` pages or ``hub.maxItems`` objects; a ``continue`` token the hub already
sent is an error (the list would never end); the answers of one command may hold
``hub.maxBytes`` bytes together; and the whole read, every list and page included, ends at
``hub.timeoutSeconds``.

The client's own timeouts cannot give that deadline (a hub that sends a byte every few
seconds never trips them): the hooks of :mod:`dsf_transport.kube_bounds` on the client's
connection pool give every socket read only the time left and count every byte of every
answer against ``hub.maxBytes``, the same hooks that bound the agent's API requests.

Every failure is a :class:`HubReadError`: one line per problem (``hub: ...``), exit 2 in the CLI.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from dsf_compile.errors import DsfError
from dsf_contract.bounded_json import load_json
from dsf_transport.http import causes, connect_failure
from dsf_transport.kube_bounds import Budget, StopReadError, bound_pools, stop_in

__all__ = [
    "DEFAULT_KUBECONFIG",
    "KUBECONFIG_VARIABLE",
    "MAX_CONTINUE_CHARS",
    "HubAccess",
    "HubReadError",
    "HubSession",
    "format_object_problems",
    "item_label",
    "open_hub",
]

#: Longest ``continue`` token sent back (the API server's are a few hundred characters of
#: base64); a longer one would make every following request line grow with it.
MAX_CONTINUE_CHARS = 4096
#: Problems listed one per line before the rest are counted.
MAX_LISTED_PROBLEMS = 20
#: Where kubectl looks for its kubeconfig, after ``--kubeconfig`` and the variable.
DEFAULT_KUBECONFIG = "~/.kube/config"
KUBECONFIG_VARIABLE = "KUBECONFIG"
#: Longest wait for a connection to open (less when less of the deadline is left).
_CONNECT_SECONDS = 10.0


class HubReadError(DsfError):
    """The hub could not be read, or answered something unusable; ``lines`` says what, one per line."""

    def __init__(self, message: str, details: tuple[str, ...] = ()) -> None:
        self.lines = (f"hub: {message}", *details)
        super().__init__("\n".join(self.lines))


class HubBounds(Protocol):
    """The bounds of one command's hub read (``hub:`` in ``dsf.yaml``, its model
    ``HubSettings`` in :mod:`dsf_compile.inputs.settings`); the edge reads only these."""

    @property
    def timeoutSeconds(self) -> float: ...
    @property
    def pageSize(self) -> int: ...
    @property
    def maxPages(self) -> int: ...
    @property
    def maxItems(self) -> int: ...
    @property
    def maxBytes(self) -> int: ...


def _budget(settings: HubBounds) -> Budget:
    """The deadline and byte budget of one command's hub read, shared by every connection."""
    return Budget(
        settings.timeoutSeconds,
        settings.maxBytes,
        deadline_message=f"no complete answer within {settings.timeoutSeconds:g} s "
        "(hub.timeoutSeconds in dsf.yaml)",
        bytes_message=f"the answers hold more than {settings.maxBytes} bytes "
        "(hub.maxBytes in dsf.yaml)",
    )


class HubSession:
    """One command's reads from a hub; use :func:`open_hub`."""

    def __init__(self, api: Any, budget: Budget, settings: HubBounds) -> None:
        self._api = api
        self._budget = budget
        self._settings = settings

    def list_objects(self, group: str, version: str, plural: str) -> list[Any]:
        """Every item of a cluster-wide list, page by page, within the read's bounds.

        The items are returned as the hub sent them (any JSON value): the caller validates
        each as it validates Git input.
        """
        settings = self._settings
        items: list[Any] = []
        seen: set[str] = set()
        token = ""
        for _page in range(settings.maxPages):
            page, token = _page_contents(self._get(group, version, plural, token), plural)
            items += page
            if len(items) > settings.maxItems:
                raise HubReadError(
                    f"the {plural} list holds more than {settings.maxItems} objects "
                    "(hub.maxItems in dsf.yaml)"
                )
            if not token:
                return items
            if token in seen:
                raise HubReadError(
                    f"the {plural} list repeats a continue token: it would never end"
                )
            seen.add(token)
        raise HubReadError(
            f"the {plural} list takes more than {settings.maxPages} pages "
            "(hub.maxPages in dsf.yaml)"
        )

    def _get(self, group: str, version: str, plural: str, token: str) -> Any:
        options: dict[str, Any] = {"limit": self._settings.pageSize}
        if token:
            options["_continue"] = token
        try:
            left = self._budget.left()
            response = self._api.list_cluster_custom_object(
                group,
                version,
                plural,
                _preload_content=False,
                _request_timeout=(min(_CONNECT_SECONDS, left), left),
                **options,
            )
            body = response.data
        except StopReadError as err:
            raise HubReadError(f"cannot list {plural}: {err}") from None
        except Exception as err:  # ApiException, urllib3's errors, OSError: one line each
            if self._budget.passed():
                raise HubReadError(
                    f"cannot list {plural}: {self._budget.deadline_message}"
                ) from None
            stop = stop_in(err)
            reason = str(stop) if stop is not None else _failure(err)
            raise HubReadError(f"cannot list {plural}: {reason}") from None
        try:
            return load_json(body)
        except ValueError as err:  # also: not UTF-8, nested too deeply, a number too long
            raise HubReadError(f"the answer to the {plural} list is not JSON ({err})") from None


def _failure(err: BaseException) -> str:
    """A short reason: the HTTP status, or what became of the connection."""
    status = getattr(err, "status", None)
    if isinstance(status, int) and status:
        reason = str(getattr(err, "reason", "") or "")[:100]  # the hub's words: kept short
        return f"HTTP {status} {reason}".rstrip()
    names = {type(cause).__name__ for cause in causes(err)}
    if any("Timeout" in name for name in names):
        return "timed out"
    if names & {"ProtocolError", "RemoteDisconnected", "IncompleteRead", "BadStatusLine"}:
        return "the hub broke off or garbled its answer"
    return connect_failure(err)


def _page_contents(answer: Any, plural: str) -> tuple[list[Any], str]:
    """A list answer's items and ``continue`` token, or an error saying what is wrong with it."""
    where = f"the answer to the {plural} list"
    if not isinstance(answer, dict):
        raise HubReadError(f"{where} is not an object")
    items = answer.get("items")
    if items is None:
        items = []  # an empty list, as the API server may send it
    if not isinstance(items, list):
        raise HubReadError(f"{where}: items is not a list")
    metadata = answer.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise HubReadError(f"{where}: metadata is not an object")
    token = metadata.get("continue") or ""
    if not isinstance(token, str) or len(token) > MAX_CONTINUE_CHARS:
        raise HubReadError(
            f"{where}: metadata.continue is not a string of at most {MAX_CONTINUE_CHARS} characters"
        )
    return items, token


@dataclass(frozen=True)
class HubAccess:
    """Where a hub's credentials come from, found as kubectl finds them.

    ``--hub-kubeconfig PATH`` if given, else ``$KUBECONFIG`` (files separated by
    ``os.pathsep``, merged: the first file to set a cluster, user, context or the current
    context wins, as kubectl merges them), else ``~/.kube/config``; ``--context NAME``
    chooses the context (default: the current one).
    """

    kubeconfig: str | None = None
    context: str | None = None

    @property
    def named_by_options(self) -> bool:
        """Whether an option asked for the hub (commands for which it is optional)."""
        return bool(self.kubeconfig or self.context)

    def named(self) -> str:
        """How an error names it: ``--hub-kubeconfig PATH``, ``$KUBECONFIG`` or the default."""
        if self.kubeconfig:
            where = f"--hub-kubeconfig {self.kubeconfig}"
        elif os.environ.get(KUBECONFIG_VARIABLE):
            where = f"${KUBECONFIG_VARIABLE} ({os.environ[KUBECONFIG_VARIABLE]})"
        else:
            where = DEFAULT_KUBECONFIG
        return f"{where}, context {self.context}" if self.context else where


def _api_client(access: HubAccess) -> Any:
    """The client of the hub ``access`` names, through the ``kubernetes`` client's own
    kubeconfig loader and a bounded merger (:mod:`dsf_compile.edges.kubeconfig`); the
    current context is the first file's that sets one."""
    from kubernetes import client  # only the commands that read a hub need it
    from kubernetes.config.kube_config import KubeConfigLoader

    from dsf_compile.edges.kubeconfig import BoundedKubeConfigMerger, kubeconfig_paths

    paths = kubeconfig_paths(
        access.kubeconfig, os.environ.get(KUBECONFIG_VARIABLE), DEFAULT_KUBECONFIG
    )
    merger = BoundedKubeConfigMerger(paths)
    if merger.config is None:
        raise ValueError("no kubeconfig file found")
    # the client's merger lets the last file's current-context win; kubectl the first's
    current = [merger.config_files[path].get("current-context") for path in merger.paths]
    first = next((name for name in current if name), None)
    if first:
        merger.config.value["current-context"] = first
    loader = KubeConfigLoader(  # type: ignore[no-untyped-call]
        config_dict=merger.config, config_base_path=None, active_context=access.context
    )
    configuration = type.__call__(client.Configuration)  # not the process-wide default
    loader.load_and_set(configuration)  # type: ignore[no-untyped-call]
    return client.ApiClient(configuration=configuration)


@contextlib.contextmanager
def open_hub(access: HubAccess, settings: HubBounds) -> Iterator[HubSession]:
    """A session on the hub ``access`` names; its deadline starts now."""
    from kubernetes import client  # only the commands that read a hub need it

    try:
        api_client = _api_client(access)
    except Exception as err:  # the client raises several unrelated types here
        text = str(err).split("\n", 1)[0][:300]
        raise HubReadError(f"{access.named()} is not usable: {text}") from None
    budget = _budget(settings)
    bound_pools(api_client.rest_client.pool_manager, lambda: budget)
    with api_client:
        yield HubSession(client.CustomObjectsApi(api_client), budget, settings)


def item_label(plural: str, index: int, item: Any) -> str:
    """``hub: PLURAL items[I] (NAMESPACE/NAME)``: where a list item is, in a problem line."""
    where = f"hub: {plural} items[{index}]"
    meta = item.get("metadata") if isinstance(item, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        return where
    namespace = meta.get("namespace")
    prefix = f"{namespace}/" if isinstance(namespace, str) and namespace else ""
    return f"{where} ({prefix}{meta['name'][:253]})"


def format_object_problems(problems: list[str]) -> tuple[str, ...]:
    """At most :data:`MAX_LISTED_PROBLEMS` lines, then how many more there were."""
    shown = tuple(problems[:MAX_LISTED_PROBLEMS])
    rest = len(problems) - len(shown)
    return (*shown, f"hub: ... and {rest} more") if rest else shown
