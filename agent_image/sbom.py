"""The agent image's SBOM: a CycloneDX 1.6 JSON document of what its root filesystem holds.

    python -m agent_image.sbom --rootfs DIR --wheels DIR --name NAME --version V --out FILE

Run in the image's build stage, after :mod:`agent_image.rootfs` filled ``DIR``, by a
virtual environment of its own holding ``cyclonedx-python-lib`` (OWASP CycloneDX's Python
library, installed from the hash-pinned ``agent/sbom-tools.lock``); it imports nothing of
the agent, so that environment needs nothing else. Components:

- every Python distribution of the agent's virtual environment (its ``*.dist-info``), with
  the SHA-256 of the wheel it was installed from (``--wheels``, the build's wheelhouse)
  and a ``pkg:pypi`` package URL;
- every Debian package owning a file of the image (dpkg's file lists, matched through
  symbolic links, so usrmerge's ``/lib`` and ``/usr/lib`` are one), with its version and
  architecture from dpkg's status and a ``pkg:deb`` package URL;
- the Python runtime as a generic ``cpython`` component when no Debian package owns the
  interpreter (an official Python image builds it into ``/usr/local``).

Files no package owns (the ``/etc/passwd`` the build writes, ``ld.so.cache``...) are
listed in the property ``dsf:unowned-files``. The document's serial number is derived
from its components and its timestamp is ``SOURCE_DATE_EPOCH`` when set: the same image
gives the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import re
import sys
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from email.parser import HeaderParser
from pathlib import Path
from typing import TYPE_CHECKING

# cyclonedx-python-lib is imported where it is used: it is the build stage's tool, not a
# dependency of the agent, whose package this file ships in
if TYPE_CHECKING:
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component

DPKG = Path("/var/lib/dpkg")
#: Files Debian packages write from their maintainer scripts, which dpkg does not list:
#: the CA bundle (``update-ca-certificates``) and the loader's cache (``ldconfig``).
GENERATED_BY = {
    "/etc/ssl/certs/ca-certificates.crt": "ca-certificates",
    "/etc/ld.so.cache": "libc-bin",
}
#: A wheel's file name: name, version, then tags (PEP 427).
WHEEL_NAME = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_digests(wheels: Path) -> dict[tuple[str, str], str]:
    """(normalized name, version) -> SHA-256 of every wheel under ``wheels``."""
    found = {}
    for wheel in sorted(wheels.rglob("*.whl")):
        match = WHEEL_NAME.match(wheel.name)
        if match:
            key = (normalize(match["name"]), match["version"])
            found[key] = hashlib.sha256(wheel.read_bytes()).hexdigest()
    return found


def python_components(rootfs: Path, wheels: Path) -> list[Component]:
    """A component per distribution installed in the image's virtual environment."""
    from cyclonedx.model import HashAlgorithm, HashType
    from cyclonedx.model.component import Component, ComponentType
    from packageurl import PackageURL

    digests = wheel_digests(wheels)
    components = []
    for metadata in sorted(rootfs.glob("opt/*/lib/python3*/site-packages/*.dist-info/METADATA")):
        headers = HeaderParser().parsestr(metadata.read_text(encoding="utf-8", errors="replace"))
        name, version = headers["Name"], headers["Version"]
        digest = digests.get((normalize(name), version))
        components.append(
            Component(
                name=name,
                version=version,
                type=ComponentType.LIBRARY,
                bom_ref=f"pypi:{normalize(name)}@{version}",
                purl=PackageURL(type="pypi", name=normalize(name), version=version),
                hashes=[HashType(alg=HashAlgorithm.SHA_256, content=digest)] if digest else None,
            )
        )
    return components


def dpkg_status() -> dict[str, dict[str, str]]:
    """``Package[:arch]`` -> its stanza in dpkg's status file (installed packages only)."""
    packages: dict[str, dict[str, str]] = {}
    status = DPKG / "status"
    if not status.is_file():
        return packages
    for stanza in status.read_text(encoding="utf-8", errors="replace").split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+): ?(.*)$", stanza, re.MULTILINE))
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            packages[fields["Package"]] = fields
            packages[f"{fields['Package']}:{fields.get('Architecture', '')}"] = fields
    return packages


def file_owners() -> dict[str, str]:
    """Real path -> the dpkg package (``name`` or ``name:arch``) that installed it. A
    package's symbolic link (``python3``'s ``/usr/bin/python3``) does not make it the
    owner of the file the link names; a file a package's scripts generate is that
    package's (:data:`GENERATED_BY`)."""
    owners: dict[str, str] = {}
    for listing in sorted((DPKG / "info").glob("*.list")):
        package = listing.name.removesuffix(".list")
        for line in listing.read_text(encoding="utf-8", errors="replace").splitlines():
            if line and os.path.isfile(line) and not os.path.islink(line):
                owners.setdefault(os.path.realpath(line), package)
    installed = dpkg_status()
    for path, package in GENERATED_BY.items():
        if package in installed and os.path.isfile(path):
            owners.setdefault(os.path.realpath(path), package)
    return owners


def image_files(rootfs: Path) -> Iterator[str]:
    """Absolute paths (as in the image) of the image's regular files; a module's
    bytecode stands for the source it was compiled from."""
    for folder, _dirs, files in os.walk(rootfs):
        for name in files:
            here = Path(folder, name)
            if here.is_symlink():
                continue
            path = "/" + str(here.relative_to(rootfs))
            yield path[:-1] if path.endswith(".pyc") and os.path.isfile(path[:-1]) else path


def os_release() -> tuple[str, str]:
    """The build stage's distribution ID and version (``debian``, ``12``)."""
    fields: dict[str, str] = {}
    for name in ("/etc/os-release", "/usr/lib/os-release"):
        if os.path.isfile(name):
            for line in Path(name).read_text().splitlines():
                key, _, value = line.partition("=")
                fields[key] = value.strip().strip('"')
            break
    return fields.get("ID", "debian"), fields.get("VERSION_ID", "")


def debian_component(fields: dict[str, str], distro: str, release: str) -> Component:
    """The component of one installed Debian package (its stanza in dpkg's status)."""
    from cyclonedx.model.component import Component, ComponentType
    from packageurl import PackageURL

    name, arch, version = fields["Package"], fields.get("Architecture", ""), fields["Version"]
    qualifiers = {"arch": arch, **({"distro": f"{distro}-{release}"} if release else {})}
    return Component(
        name=name,
        version=version,
        type=ComponentType.LIBRARY if name.startswith("lib") else ComponentType.APPLICATION,
        bom_ref=f"deb:{name}:{arch}@{version}",
        purl=PackageURL(
            type="deb", namespace=distro, name=name, version=version, qualifiers=qualifiers
        ),
    )


def debian_components(rootfs: Path) -> tuple[list[Component], list[str], bool]:
    """The Debian packages owning the image's files, the files none owns, and whether
    the Python interpreter is one of the owned files."""
    owners, status = file_owners(), dpkg_status()
    python = os.path.realpath(sys.executable)
    packages: set[str] = set()
    unowned, python_owned = [], False
    for path in sorted(image_files(rootfs)):
        if path.startswith("/opt/"):  # the virtual environment: Python distributions
            continue
        owner = owners.get(os.path.realpath(path))
        if owner is None or owner not in status:  # no package, or one half-installed
            unowned.append(path)
            continue
        packages.add(owner)
        python_owned = python_owned or os.path.realpath(path) == python
    distro, release = os_release()
    components = [debian_component(status[owner], distro, release) for owner in sorted(packages)]
    return components, unowned, python_owned


def build_bom(rootfs: Path, wheels: Path, name: str, version: str) -> Bom:
    """The SBOM of the image whose root filesystem is ``rootfs``."""
    from cyclonedx.model import Property
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component, ComponentType
    from packageurl import PackageURL

    components = python_components(rootfs, wheels)
    debian, unowned, python_owned = debian_components(rootfs)
    components += debian
    if not python_owned:
        runtime = platform.python_version()
        components.append(
            Component(
                name="cpython",
                version=runtime,
                type=ComponentType.FRAMEWORK,
                bom_ref=f"generic:cpython@{runtime}",
                purl=PackageURL(type="generic", name="cpython", version=runtime),
            )
        )
    image = Component(name=name, version=version, type=ComponentType.CONTAINER, bom_ref=name)
    identity = "\n".join(sorted(str(c.purl) for c in components))
    bom = Bom(
        components=components,
        serial_number=uuid.uuid5(uuid.NAMESPACE_URL, f"{name}:{version}\n{identity}"),
        properties=[Property(name="dsf:unowned-files", value=" ".join(unowned))],
    )
    bom.metadata.component = image
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    bom.metadata.timestamp = (
        datetime.fromtimestamp(int(epoch), UTC) if epoch.isdigit() else datetime.now(UTC)
    )
    bom.register_dependency(image, components)
    return bom


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent_image.sbom", description=__doc__)
    parser.add_argument("--rootfs", type=Path, required=True)
    parser.add_argument("--wheels", type=Path, required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    from cyclonedx.output.json import JsonV1Dot6

    bom = build_bom(args.rootfs, args.wheels, args.name, args.version)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(JsonV1Dot6(bom).output_as_string(indent=2) + "\n")
    print(f"SBOM: {len(bom.components)} components -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
