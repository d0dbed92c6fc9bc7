"""Run in an image's build stage: fails the build when the base image's Python is not the
version the build context's wheels were made for (``python-version``, beside this file).

``scripts/image-build.sh`` (``stamp_python``) puts both into the build context of the
agent's and the samples' images; a wheel of a C extension runs only on its own version.
"""

from __future__ import annotations

import sys
from pathlib import Path

want = (Path(__file__).parent / "python-version").read_text(encoding="utf-8").strip()
have = "{}.{}".format(*sys.version_info[:2])
if have != want:
    sys.exit(
        f"error: BASE_IMAGE has Python {have}, the wheels were made for {want} "
        f"(run build-image.sh with PYTHON=python{have})"
    )
