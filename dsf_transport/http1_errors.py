"""What can go wrong with one plain HTTP/1.1 exchange of :mod:`dsf_transport.http1`.

The classes are named and ranked as httpx's exceptions are (``ConnectError`` is a
``NetworkError``, ``ReadTimeout`` a ``TimeoutException``...): the agent's failure messages
carry the class name, and they read the same whichever client made the request. They are
separate classes so that plain requests import no httpx; :mod:`dsf_transport.plainhttp`
turns each into httpx's of the same name for its httpx callers, and
:func:`dsf_transport.http.describe_failure` names both.
"""

from __future__ import annotations


class TransportError(Exception):
    """Any failure of an exchange."""


class TimeoutException(TransportError):
    """A phase of the exchange took longer than its timeout."""


class ConnectTimeout(TimeoutException):
    """Connecting took too long."""


class ReadTimeout(TimeoutException):
    """The response took too long to arrive."""


class WriteTimeout(TimeoutException):
    """The request took too long to send."""


class NetworkError(TransportError):
    """The connection failed."""


class ConnectError(NetworkError):
    """The connection could not be made."""


class ReadError(NetworkError):
    """Reading from the connection failed."""


class WriteError(NetworkError):
    """Writing to the connection failed."""


class ProtocolError(TransportError):
    """The exchange broke HTTP/1.1."""


class RemoteProtocolError(ProtocolError):
    """The server's answer broke HTTP/1.1."""


class LocalProtocolError(ProtocolError):
    """The request would break HTTP/1.1 (a header with a line break)."""


class DecodingError(TransportError):
    """The body's ``Content-Encoding`` could not be undone."""
