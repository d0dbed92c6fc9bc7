"""Building the two Kubernetes API clients: the managed cluster's and the hub's, bounded.

``kubernetes`` is imported only here and only when needed: with ``--config-file``,
``--secrets-dir`` and no hub, the agent never loads it (it costs ~15 MB of memory).

Every request of both clients is made through :func:`read_bounded` or
:class:`BoundedCalls` (a watch, inside :func:`dsf_transport.kube_bounds.within`): a deadline
for the whole request — connect, TLS, request, status line, headers and body — and a cap on
the bytes of its answer (:mod:`dsf_transport.kube_bounds`); the clients refuse a request
made outside a budget (:func:`required_budget`), so no call can slip past them. The client's own ``_request_timeout`` applies to each
socket read, so without them an API server, or anything on the path, that sends a byte
every few seconds would hold the request for ever, and a 2 GiB answer would be read whole.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Unpack

from agent.errors import AgentError, Reason
from dsf_contract.failures import RequestFailure, api_status_reason
from dsf_transport.kube_bounds import Budget, StopReadError, bound_pools, current, stop_in, within

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

# The agent calls the official client with ``_preload_content=False`` and parses the body
# itself; these Protocols name the few methods it uses, so that the emulated API of the
# tests and the real client are interchangeable and every call is checked by mypy.


class RawResponse(Protocol):
    """What a call with ``_preload_content=False`` returns (a urllib3 response)."""

    @property
    def data(self) -> bytes:
        """The whole body."""
        ...

    def shutdown(self) -> None:
        """Shut the socket down for reading: a reader blocked in another thread wakes up."""
        ...

    def close(self) -> None:
        """Close the response."""
        ...

    def release_conn(self) -> None:
        """Give the connection back to the pool."""
        ...


def interrupt(response: RawResponse | None) -> None:
    """End a read blocked on ``response`` in another thread (a watch), and close it."""
    if response is None:
        return
    # close() alone does not wake a thread blocked reading the socket; shutting the socket
    # down does (urllib3 >= 2.3; older ones raise, and close is left).
    with contextlib.suppress(Exception):
        response.shutdown()
    with contextlib.suppress(Exception):
        response.close()


#: ``_request_timeout`` of the client: one total, or (connect, read)
RequestTimeout = float | tuple[float, float] | None


class RawCall(TypedDict, total=False):
    """The options of every call the agent makes: the body left unparsed (a
    :class:`RawResponse`), each socket read within ``_request_timeout``."""

    _preload_content: bool
    _request_timeout: RequestTimeout


#: Bytes one answer of a Kubernetes API may hold. An object is at most about 1.5 MiB (etcd's
#: default request limit; an AddOnPlacementScore, a Secret, the one-ConfigMap list), its
#: JSON in an answer about as much: 8 MiB leaves room and keeps a flood far below the pod's
#: memory limit.
MAX_API_ANSWER_BYTES = 8 * 1024 * 1024


def api_budget(what: str, seconds: float, max_bytes: int = MAX_API_ANSWER_BYTES) -> Budget:
    """The deadline and byte cap of one request (``what`` names it in the error)."""
    return Budget(
        seconds,
        max_bytes,
        deadline_message=f"{what}: no complete answer within {seconds:g} s",
        bytes_message=f"{what}: answer over {max_bytes} bytes",
    )


def read_bounded(call: Callable[[], RawResponse], budget: Budget) -> bytes:
    """Make the request ``call`` and read its whole answer, within ``budget``.

    Raises :class:`StopReadError` when the deadline passes or the answer is too large (the
    connection is closed, not given back to the pool with an answer half read), and
    whatever the client raises otherwise.
    """
    with within(budget):
        response = call()
        try:
            return response.data
        except BaseException:
            with contextlib.suppress(Exception):
                response.close()
            raise
        finally:
            with contextlib.suppress(Exception):
                response.release_conn()


def bound_failure(err: BaseException, budget: Budget) -> tuple[str, str] | None:
    """(reason, message) when ``err`` is ``budget`` running out, else None."""
    stop = err if isinstance(err, StopReadError) else stop_in(err)
    if stop is None and not budget.passed():
        return None
    if budget.bytes_left < 0:
        return RequestFailure.TOO_LARGE, str(stop)
    if budget.passed():
        return RequestFailure.TIMEOUT, budget.deadline_message
    return RequestFailure.INVALID_RESPONSE, str(stop)


#: Watches in a row that end early without an event before it is said at warning: one
#: is an outage's or an API server restart's, and the next request says that; three are an
#: API (or a proxy) that ends every watch at once. Each is counted all the same.
EARLY_WATCH_ENDS_WARNED = 3


class BoundedReadError(Exception):
    """A request cut by its budget; ``reason`` says how (``timeout``, ``too_large``, ...)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class BoundedCalls:
    """The requests one part of the agent makes to a Kubernetes API, each within its own
    deadline (``timeout``) and byte cap (:data:`MAX_API_ANSWER_BYTES`); ``stop`` (set from
    another thread) ends the one in progress within a read slice.

    A budget running out raises :class:`BoundedReadError`; anything else the client
    raises (an :class:`ApiException`, a refused connection) is raised as it is.
    """

    def __init__(self, timeout: float, *, stop: threading.Event | None = None) -> None:
        self.timeout = timeout
        self._stop = stop

    def budget(self, what: str, seconds: float | None = None) -> Budget:
        """One request's budget: ``seconds`` (default: the timeout) and the byte cap."""
        budget = api_budget(what, self.timeout if seconds is None else seconds)
        budget.stop = self._stop
        return budget

    def read(self, call: Callable[[], RawResponse], what: str) -> bytes:
        """The whole answer of the request ``call``."""
        budget = self.budget(what)
        try:
            return read_bounded(call, budget)
        except Exception as err:
            raise _cut(err, budget) from None

    def first_line(
        self, call: Callable[[], RawResponse], what: str, seconds: float
    ) -> bytes | None:
        """The first line of the watch ``call`` opens (asked to last ``seconds``), or
        ``None`` when it ends without one; the whole watch within ``seconds`` and the
        timeout, its line within the byte cap (an endless line is cut, not held)."""
        from kubernetes.watch.watch import iter_resp_lines

        budget = self.budget(what, seconds + self.timeout)
        try:
            with within(budget):
                response = call()
                try:
                    for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                        return bytes(line.encode() if isinstance(line, str) else line)
                    return None
                finally:
                    # the rest of the watch is not read: the connection is not reused
                    with contextlib.suppress(Exception):
                        response.close()
                    with contextlib.suppress(Exception):
                        response.release_conn()
        except Exception as err:
            raise _cut(err, budget) from None


def _cut(err: Exception, budget: Budget) -> Exception:
    """``err`` as :class:`BoundedReadError` when it is ``budget`` running out."""
    bounded = bound_failure(err, budget)
    return err if bounded is None else BoundedReadError(*bounded)


# The generated methods declare the model they return when the body is preloaded; called
# with ``_preload_content=False`` they return a :class:`RawResponse`, hence ``Any`` below.


class ManagedClusterApi(Protocol):
    """The part of ``CoreV1Api`` the agent uses: its ConfigMap and its Secrets."""

    def list_namespaced_config_map(
        self,
        namespace: str,
        *,
        field_selector: str | None = ...,
        resource_version: str | None = ...,
        timeout_seconds: int | None = ...,
        watch: bool | None = ...,
        **options: Unpack[RawCall],
    ) -> Any:
        """List (or, with ``watch=True``, watch) the ConfigMaps of ``namespace``."""
        ...

    def read_namespaced_secret(
        self,
        name: str,
        namespace: str,
        **options: Unpack[RawCall],
    ) -> Any:
        """Read one Secret."""
        ...


class ObjectsCall(RawCall):
    """A ``CustomObjectsApi`` call on the objects of one namespaced resource: where they
    are, and the options of every call."""

    group: str
    version: str
    namespace: str
    plural: str


class HubApi(Protocol):
    """The part of ``CustomObjectsApi`` the agent uses: AddOnPlacementScores."""

    def get_namespaced_custom_object(self, *, name: str, **call: Unpack[ObjectsCall]) -> Any:
        """Read one object."""
        ...

    def create_namespaced_custom_object(
        self, *, body: dict[str, Any], **call: Unpack[ObjectsCall]
    ) -> Any:
        """Create one object (its status is dropped)."""
        ...

    def replace_namespaced_custom_object_status(
        self, *, name: str, body: dict[str, Any], **call: Unpack[ObjectsCall]
    ) -> Any:
        """Replace the status subresource of one object."""
        ...


def _quiet_configuration() -> Any:
    """A client configuration without urllib3's own retries.

    urllib3 retries a failed connection three times and logs a warning each time, for
    every request of every scorer: during an outage those lines bury the agent's own,
    deduplicated ones. The agent already retries where it matters (conflicts on publish)
    and counts every failure per cycle, so the client fails at once and the cycle speaks.
    """
    from kubernetes import client

    configuration = client.Configuration()
    configuration.retries = 0
    return configuration


def managed_cluster_client() -> ApiClient:
    """An ``ApiClient`` for this cluster: in-cluster credentials, else ``KUBECONFIG``."""
    from kubernetes import client, config

    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        configuration = _quiet_configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except config.ConfigException as err:
            raise AgentError(
                f"in-cluster credentials unusable: {err}", reason=Reason.KUBE_CONFIG
            ) from None
        return _bounded(client.ApiClient(configuration))
    try:
        api_client: ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
            persist_config=False, client_configuration=_quiet_configuration()
        )
        return _bounded(api_client)
    except (config.ConfigException, OSError) as err:
        raise AgentError(
            f"no in-cluster credentials and no usable kubeconfig (KUBECONFIG): {err}",
            reason=Reason.KUBE_CONFIG,
        ) from None


def hub_client(kubeconfig: Path) -> ApiClient:
    """An ``ApiClient`` for the hub from its kubeconfig file."""
    from kubernetes import config

    try:
        api_client: ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig),
            persist_config=False,
            client_configuration=_quiet_configuration(),
        )
        return _bounded(api_client)
    except (config.ConfigException, OSError) as err:
        raise AgentError(
            f"hub kubeconfig {kubeconfig} unusable: {err}", reason=Reason.KUBE_CONFIG
        ) from None


def _bounded(api_client: ApiClient) -> ApiClient:
    """``api_client`` with the hooks that let :func:`read_bounded` bound its requests, and
    that refuse a request made outside any budget: every call of the agent goes through its
    bounded reads, or fails at once (:func:`required_budget`)."""
    bound_pools(api_client.rest_client.pool_manager, required_budget)
    return api_client


def required_budget() -> Budget:
    """The budget in force (:func:`dsf_transport.kube_bounds.within`); raises
    :class:`StopReadError` when there is none: the agent's clients make no unbounded request."""
    budget = current()
    if budget is None:
        raise StopReadError("a request outside the agent's bounded reads (agent/kube.py)")
    return budget


def core_api(api_client: ApiClient) -> ManagedClusterApi:
    """``CoreV1Api`` on ``api_client`` (ConfigMap and Secrets)."""
    from kubernetes import client

    api: ManagedClusterApi = client.CoreV1Api(api_client)
    return api


def custom_objects_api(api_client: ApiClient) -> HubApi:
    """``CustomObjectsApi`` on ``api_client`` (AddOnPlacementScores)."""
    from kubernetes import client

    api: HubApi = client.CustomObjectsApi(api_client)
    return api


def api_error_reason(err: Exception) -> str:
    """A metric label for a failed request to the cluster API."""
    from kubernetes.client.exceptions import ApiException

    if isinstance(err, AgentError | BoundedReadError):
        return err.reason
    if isinstance(err, ApiException):
        status = err.status or 0
        return api_status_reason(status)
    return RequestFailure.UNREACHABLE
