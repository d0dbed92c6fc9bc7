"""A private CA and a server certificate it signed, made with ``openssl`` for the TLS tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_pki(folder: Path, subject_alt_name: str) -> Path:
    """A private CA in ``folder`` and a server certificate for ``subject_alt_name`` signed by it."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    folder.mkdir()
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=dsf private CA",
        cwd=folder,
    )  # fmt: skip
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=dsf test server",
        cwd=folder,
    )  # fmt: skip
    (folder / "ext.cnf").write_text(f"subjectAltName={subject_alt_name}\n")
    _openssl(
        "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "ext.cnf",
        cwd=folder,
    )  # fmt: skip
    return folder
