"""``dsf-compile sync``: the scorers' answers into ``dsf.lock.json`` (:mod:`.fetch`), and the
hub's ManagedClusters into ``clusters/discovered.yaml`` (:mod:`.clusters`).

:mod:`dsf_transport` is imported first: it keeps httpx's command line (click, rich and
pygments, about a tenth of a second of every sync) from loading.
"""

from __future__ import annotations

import dsf_transport  # noqa: F401
