"""``dsf-compile sync``: the scorers' answers into ``dsf.lock.json`` (:mod:`.fetch`), and the
hub's ManagedClusters into ``clusters/discovered.yaml`` (:mod:`.clusters`).

httpx's package imports its command line (``httpx._main``: click, rich and pygments, about
a tenth of a second of every sync) whenever those are installed, as the compiler's own
dependencies (``common-expression-language``) install rich; sync never runs it. The name
is httpx's own, held to the pinned httpx range as the agent's is
(``tests/agent/test_httpx_pin.py``).
"""

from __future__ import annotations

import sys

sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
