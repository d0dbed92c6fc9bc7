"""Writing files safely: through a temporary file and a rename."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(file: Path, data: bytes) -> None:
    """Write ``data`` to ``file`` through a temporary file and a rename."""
    fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, file)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
