"""The agent image's root filesystem: only what running the agent loads, copied out of the
build stage into a folder the image's ``FROM scratch`` stage takes whole.

    /opt/dsf-agent/bin/python -m agent_image.rootfs DEST   # in the build stage

Run with the agent's virtual environment, after its wheels are installed. It imports the
agent as :mod:`agent_image.deps` does (the modules it loads lazily too), opens a TLS
context, and then copies, each at its own path under ``DEST``:

- the virtual environment whole (its Python sources compiled, see below);
- the standard-library modules then loaded, with every module they import anywhere in
  their code (found by :mod:`modulefinder`, so a module imported only inside a function
  is there when the function runs), less :data:`LEFT_OUT` (tests, IDLE, tkinter, ensurepip,
  pydoc's data, distutils, lib2to3...), and the whole ``encodings`` package (codecs are
  looked up by name, from any answer's ``charset``);
- the interpreter, its program loader, and every shared library mapped into the process
  (``/proc/self/maps``) once each C extension of that set is loaded, with the symbolic links
  (sonames) pointing at them;
- the CA bundle OpenSSL was built to read, ``/etc/nsswitch.conf`` and ``/etc/ld.so.cache``
  when the base has them; an ``/etc/passwd`` and ``/etc/group`` naming root and UID 65532
  (``nonroot``); an empty ``/tmp``.

No shell, package manager or compiler is among them: the agent never loads one. Python
sources are replaced by their bytecode (``X.py`` -> ``X.pyc`` beside it, unchecked hash
mode: the same bytes every build), which halves the image; a traceback then names files
and lines without quoting them.
"""

from __future__ import annotations

import argparse
import importlib
import modulefinder
import os
import py_compile
import shutil
import ssl
import struct
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from pathlib import Path

from dsf_contract.agent_cli import PROGRAM

#: Standard-library packages and modules a static scan reaches but the agent never runs.
LEFT_OUT = frozenset(
    {
        "test", "idlelib", "tkinter", "_tkinter", "turtle", "turtledemo", "ensurepip",
        "pydoc_data", "distutils", "lib2to3", "unittest", "doctest", "pdb", "bdb",
        "sqlite3", "_sqlite3", "dbm", "curses", "_curses", "readline", "venv",
        "_testcapi", "_testinternalcapi", "_testbuffer", "_testmultiphase", "_ctypes_test",
    }
)  # fmt: skip
#: At most this many symbolic links are followed for one path (the kernel's own limit).
MAX_LINKS = 40
#: File suffixes of a distribution that nothing runs: C and Cython sources, type stubs.
SOURCE_ONLY = (".pyi", ".pyx", ".pxd", ".pxi", ".c", ".h", ".cpp")
NONROOT = 65532
#: The one program of the virtual environment's ``bin/`` the image keeps (beside the
#: interpreter's links): the other distributions' commands (``httpx``, ``wsdump``...) are
#: never run.
ENTRY_POINT = PROGRAM


class RootFs:
    """A folder that receives absolute paths of this system, symbolic links kept."""

    def __init__(self, dest: Path) -> None:
        self.dest = dest
        self.copied: set[str] = set()

    def target(self, path: str) -> Path:
        return self.dest / path.lstrip("/")

    def add(self, path: str, links: int = 0) -> None:
        """Copy ``path`` (absolute), and the symbolic links on the way to it as links."""
        if links > MAX_LINKS:
            raise OSError(f"{path}: too many levels of symbolic links")
        parts = Path(path).parts
        current = Path("/")
        for index, part in enumerate(parts[1:], start=2):
            current = current / part
            if current.is_symlink():
                link = os.readlink(current)
                self._link(str(current), link)
                rest = parts[index:]
                resolved = os.path.normpath(os.path.join(current.parent, link, *rest))
                self.add(resolved, links + 1)
                return
        self._file(path)

    def _link(self, path: str, link: str) -> None:
        here = self.target(path)
        if not here.is_symlink():
            here.parent.mkdir(parents=True, exist_ok=True)
            here.symlink_to(link)

    def _file(self, path: str) -> None:
        if path in self.copied:
            return
        here = self.target(path)
        here.parent.mkdir(parents=True, exist_ok=True)
        if os.path.isdir(path):
            here.mkdir(exist_ok=True)
        else:
            shutil.copy2(path, here)
        self.copied.add(path)

    def add_sources(self, path: str) -> None:
        """A Python module's bytecode at ``X.pyc`` beside ``X.py``, or the file as it is."""
        if not path.endswith(".py"):
            self.add(path)
            return
        real = os.path.realpath(path)
        here = self.target(path + "c")
        here.parent.mkdir(parents=True, exist_ok=True)
        py_compile.compile(
            real,
            cfile=str(here),
            dfile=path,
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
        self.copied.add(path)


def exercise() -> None:
    """Load what the agent loads while it runs, not only at import time."""
    from agent_image.deps import import_agent

    import_agent()
    ssl.create_default_context().load_default_certs()


def stdlib_dirs() -> tuple[str, str]:
    """The standard library's folder and its C extensions' (``lib-dynload``)."""
    stdlib = sysconfig.get_paths()["stdlib"]
    return stdlib, os.path.join(stdlib, "lib-dynload")


def _in_stdlib(filename: str) -> bool:
    stdlib, _ = stdlib_dirs()
    return filename.startswith(stdlib + os.sep) and "-packages" not in filename


def _left_out(name: str) -> bool:
    return name.partition(".")[0] in LEFT_OUT


def stdlib_modules() -> dict[str, str]:
    """Module name -> file of every standard-library module loaded now, and of every one
    they import anywhere, :data:`LEFT_OUT` aside (unless it is loaded now)."""
    loaded = {
        name: module.__file__
        for name, module in list(sys.modules.items())
        if getattr(module, "__file__", None) and _in_stdlib(str(module.__file__))
    }
    finder = modulefinder.ModuleFinder(path=list(stdlib_dirs()), excludes=sorted(LEFT_OUT))
    for name in sorted(loaded):
        try:
            finder.import_hook(name)
        except ImportError:  # a platform's module (nt, _winapi...): not here
            continue
    found = {}
    for name, module in finder.modules.items():
        filename = getattr(module, "__file__", None)  # a modulefinder.Module's, untyped
        if filename and _in_stdlib(filename) and not _left_out(name):
            found[name] = str(filename)
    return {**found, **{name: str(path) for name, path in loaded.items()}}


def encodings_files() -> list[str]:
    """The ``encodings`` package whole and the C codecs of East Asian encodings."""
    stdlib, dynload = stdlib_dirs()
    package = Path(stdlib, "encodings")
    files = [str(path) for path in sorted(package.glob("*.py"))]
    codecs = ("_codecs_", "_multibytecodec")
    return files + [str(p) for p in sorted(Path(dynload).glob("*.so")) if p.name.startswith(codecs)]


def load_extensions(files: Iterable[str]) -> None:
    """Import each C extension module of ``files``, so its shared libraries get mapped."""
    _, dynload = stdlib_dirs()
    for path in files:
        if path.startswith(dynload) and path.endswith(".so"):
            name = Path(path).name.split(".", 1)[0]
            try:
                importlib.import_module(name)
            except ImportError:
                continue


def mapped_libraries() -> list[str]:
    """Every file mapped into this process that is a shared object."""
    found = set()
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith("/") and ".so" in fields[5]:
            found.add(fields[5].strip())
    return sorted(found)


def elf_interpreter(path: str) -> str | None:
    """The program loader an ELF executable names (``PT_INTERP``), if any."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:  # 64-bit only: the platforms we ship
        return None
    order = "<" if data[5] == 1 else ">"
    (phoff,) = struct.unpack_from(order + "Q", data, 0x20)
    phentsize, phnum = struct.unpack_from(order + "HH", data, 0x36)
    for index in range(min(phnum, 256)):
        entry = phoff + index * phentsize
        p_type, _flags, offset, _vaddr, _paddr, size = struct.unpack_from(
            order + "IIQQQQ", data, entry
        )
        if p_type == 3:
            return data[offset : offset + size].rstrip(b"\0").decode()
    return None


def add_soname_links(rootfs: RootFs, libraries: Iterable[str]) -> None:
    """The symbolic links beside each library (and in the loader's folders) that point at
    it: the names (sonames) programs ask the loader for."""
    wanted = {os.path.realpath(path) for path in libraries}
    folders = {os.path.dirname(path) for path in wanted} | {"/lib", "/lib64", "/usr/lib64"}
    for folder in sorted(folders):
        if not os.path.isdir(folder) or os.path.islink(folder):
            continue
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.is_symlink() and os.path.realpath(entry.path) in wanted:
                rootfs.add(entry.path)


def add_runtime(rootfs: RootFs) -> None:
    """The interpreter, its loader and libraries, the CA bundle and the system files."""
    python = os.path.realpath(sys.executable)
    rootfs.add(sys.executable)
    interpreter = elf_interpreter(python)
    libraries = mapped_libraries()
    for path in [*libraries, *([interpreter] if interpreter else [])]:
        rootfs.add(path)
    add_soname_links(rootfs, libraries)
    for name in os.listdir("/"):  # usrmerge's /lib -> usr/lib: the loader's search path
        if name.startswith("lib") and os.path.islink("/" + name):
            rootfs.add("/" + name)
    paths = ssl.get_default_verify_paths()
    for path in (paths.cafile, paths.openssl_cafile, "/etc/nsswitch.conf", "/etc/ld.so.cache"):
        if path and os.path.isfile(path):
            rootfs.add(path)


def _kept(folder: str, name: str) -> bool:
    """Whether the virtual environment's file ``name`` in ``folder`` goes in the image."""
    if name.endswith(SOURCE_ONLY):
        return False
    if folder == os.path.join(sys.prefix, "bin"):
        return name == ENTRY_POINT or os.path.islink(os.path.join(folder, name))
    return True


def add_venv(rootfs: RootFs) -> None:
    """The virtual environment, sources compiled; C/Cython sources, stubs and every
    command but the agent's left out."""
    for folder, dirs, files in os.walk(sys.prefix):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if _kept(folder, name):
                rootfs.add_sources(os.path.join(folder, name))
        for name in dirs:
            if os.path.islink(os.path.join(folder, name)):
                rootfs.add(os.path.join(folder, name))


def add_system_files(rootfs: RootFs) -> None:
    """``/etc/passwd`` and ``/etc/group`` for root and the agent's user, an empty ``/tmp``."""
    etc = rootfs.target("/etc")
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "passwd").write_text(
        f"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:{NONROOT}:{NONROOT}:nonroot:/home/nonroot:/sbin/nologin\n"
    )
    (etc / "group").write_text(f"root:x:0:\nnonroot:x:{NONROOT}:\n")
    tmp = rootfs.target("/tmp")
    tmp.mkdir(exist_ok=True)
    tmp.chmod(0o1777)


def build(dest: Path) -> RootFs:
    """Fill ``dest`` with the agent's root filesystem (see the module's docstring)."""
    exercise()
    modules = stdlib_modules()
    files = sorted({*modules.values(), *encodings_files()})
    load_extensions(files)
    rootfs = RootFs(dest)
    rootfs.add(stdlib_dirs()[1])  # lib-dynload: Python looks for the folder at start
    for path in files:
        rootfs.add_sources(path)
    add_runtime(rootfs)
    add_venv(rootfs)
    add_system_files(rootfs)
    return rootfs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent_image.rootfs", description=__doc__)
    parser.add_argument("dest", type=Path, help="an empty or absent folder")
    args = parser.parse_args(argv)
    rootfs = build(args.dest)
    print(f"agent rootfs: {len(rootfs.copied)} files in {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
