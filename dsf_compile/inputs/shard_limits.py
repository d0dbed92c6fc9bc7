"""What ``render.shards`` may hold and how its shards are numbered (standard library only).

``dsf.yaml``'s setting is bounded by :data:`MAX_SHARDS` (:mod:`.settings`); the names
derived from a shard's number (:mod:`.names`) and the folders render writes
(:mod:`dsf_compile.render.shards`, which the no-op check imports, so no model is loaded
here) share :func:`shard_digits`.
"""

from __future__ import annotations

#: The most shards a fleet may have (``render.shards``, or what the byte budget asks for):
#: 1,024 Applications already carry about 460,000 clusters of 100 scorers, and a tiny
#: budget must not make render generate millions of folders.
MAX_SHARDS = 1024


def shard_digits(count: int) -> int:
    """How wide the shard numbers of ``count`` shards are: at least 2 (``shards/07``)."""
    return max(2, len(str(count - 1)))
