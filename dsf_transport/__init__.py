"""The plumbing the compiler and the agent share to talk HTTP and to the Kubernetes API.

No contract fact lives here (those are in :mod:`dsf_contract`): these modules carry
requests. :mod:`dsf_transport.http` sets up every HTTP client (no redirects, no cookies,
each program's ``User-Agent``), reads answers under a byte cap and names a failed request
(with the words of :mod:`dsf_contract.failures`);
:mod:`dsf_transport.http1` is the lean HTTP/1.1 keep-alive client for ``http://`` (its
connections are :mod:`dsf_transport.http1_connection`, the
heads it writes and parses :mod:`dsf_transport.http1_heads`, its exceptions
:mod:`dsf_transport.http1_errors`), which the agent calls directly and
:mod:`dsf_transport.plainhttp` puts under httpx's transport API;
:mod:`dsf_transport.connect_to` parses ``--resolve`` values (importing no HTTP client)
and :mod:`dsf_transport.connect_transport` connects elsewhere while keeping the names;
:mod:`dsf_transport.kube_bounds` puts a whole-request deadline and a byte cap on the
official ``kubernetes`` client. The agent's image ships this package beside
:mod:`dsf_contract` (``agent/Containerfile``); it imports nothing of the compiler.
"""

from __future__ import annotations

import sys

# httpx's package imports its command line (``httpx._main``: click, rich and pygments, about
# 6 MB of memory and a tenth of a second) whenever those happen to be installed, as the
# compiler's own dependencies install rich; no program of ours runs it. Importing this
# package first leaves it out, for the agent and for sync alike. The module's name is
# httpx's own, not its API: pyproject.toml pins the httpx range it is tested with
# (tests/agent/test_httpx_pin.py).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
