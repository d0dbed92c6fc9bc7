"""Property: whatever a pull request plants in ``rendered/``, dsf-compile stays inside the root.

Random links (to a secret file and a folder outside the repository), FIFOs, folders
where files belong, and odd names (newlines, bytes that are not UTF-8) are planted in
``rendered/`` of a small rendered fleet, some also named in ``rendered/.dsf-files``; then
``render``, ``render --check`` and ``diff`` (both formats) run in-process. Every file
operation that can write, create or delete is watched: each must land inside the root,
no FIFO may be opened, nothing outside may change, and no byte of the secret may appear
in any output.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsf_compile.commands.cli import run
from dsf_compile.sync.lock import write_lockfile
from tests.bad_input_base import BASE, BASE_CONFIGS, base_lock

SECRET = b"OUTSIDE-SECRET-5d1e"
FOLDERS = ["", "hub", "clusters", "crds", "bootstrap/argocd", "nowhere"]
NAMES: list[str | bytes] = [
    "kustomization.yaml",
    "dynamicscoringconfig.yaml",
    "clusters",
    "hub",
    ".dsf-files",
    ".kustomization.yaml.dsf-tmp",
    "new\nline.yaml",
    b"\xff\xfe.yaml",
    "x",
]
KINDS = ["link-secret", "link-folder", "link-relative", "fifo", "folder", "file"]
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


@pytest.fixture(scope="module")
def template() -> Iterator[Path]:
    """The small base fleet, rendered once."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "repo"
        shutil.copytree(BASE, root)
        write_lockfile(root, base_lock(BASE_CONFIGS))
        code = run(["--root", str(root), "render"], io.StringIO(), io.StringIO())
        assert code == 0
        yield root


def _snapshot(folder: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for parent, folders, files in os.walk(folder):
        for name in [*folders, *files]:
            path = os.path.join(parent, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                found[path] = ("link", os.readlink(path))
            elif stat.S_ISREG(mode):
                found[path] = Path(path).read_bytes()
            else:
                found[path] = stat.S_IFMT(mode)
    return found


def _plant(rendered: Path, outside: Path, folder: str, name: str | bytes, kind: str) -> bytes:
    """Plant one thing; return its path relative to ``rendered`` (b"" if it could not be)."""
    relative = os.fsencode(folder + "/" if folder else "") + os.fsencode(name)
    parent = os.fsencode(rendered)
    for part in os.fsencode(folder).split(b"/") if folder else []:
        parent = os.path.join(parent, part)
        if not os.path.lexists(parent):
            os.mkdir(parent)
        if not stat.S_ISDIR(os.lstat(parent).st_mode):
            return b""  # a link or a file planted before: never plant through it
    path = os.path.join(parent, os.fsencode(name))
    if os.path.lexists(path):
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    if kind == "link-secret":
        os.symlink(outside / "secret.txt", path)
    elif kind == "link-folder":
        os.symlink(outside / "folder", path)
    elif kind == "link-relative":
        os.symlink(b"../" * (relative.count(b"/") + 2) + b"outside/secret.txt", path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        os.mkdir(path)
    else:
        Path(os.fsdecode(path)).write_bytes(b"planted: 1\n")
    return relative


class _Watch:
    """Wraps the os functions that write, create or delete, and opening; records violations."""

    def __init__(self, root: Path) -> None:
        self.root = os.path.realpath(root)
        self.violations: list[str] = []

    def where(self, path: Any, dir_fd: int | None) -> str:
        if isinstance(path, int):
            return os.readlink(f"/proc/self/fd/{path}")
        base = os.readlink(f"/proc/self/fd/{dir_fd}") if dir_fd is not None else os.getcwd()
        full = os.path.join(base, os.fsdecode(path))
        # The name itself is not resolved (the operations act on it, not on a link's target).
        return os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))

    def check(self, what: str, path: Any, dir_fd: int | None) -> None:
        where = self.where(path, dir_fd)
        if not where.startswith(self.root + os.sep):
            self.violations.append(f"{what} outside the root: {where}")

    def install(self, patch: pytest.MonkeyPatch) -> None:
        real_open = os.open

        def watched_open(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
            dir_fd = kw.get("dir_fd")
            try:
                found = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
                if stat.S_ISFIFO(found.st_mode):
                    self.violations.append(f"opened a FIFO: {self.where(path, dir_fd)}")
            except OSError:
                pass
            if flags & _WRITES:
                self.check("opened for writing", path, dir_fd)
            return real_open(path, flags, mode, **kw)

        patch.setattr(os, "open", watched_open)
        for name, arguments in {
            "unlink": (("path", "dir_fd"),),
            "remove": (("path", "dir_fd"),),
            "rmdir": (("path", "dir_fd"),),
            "mkdir": (("path", "dir_fd"),),
            "rename": (("src", "src_dir_fd"), ("dst", "dst_dir_fd")),
            "replace": (("src", "src_dir_fd"), ("dst", "dst_dir_fd")),
            "link": (("src", "src_dir_fd"), ("dst", "dst_dir_fd")),
        }.items():
            patch.setattr(os, name, self._wrap(name, getattr(os, name), arguments))

    def _wrap(
        self, name: str, real: Callable[..., Any], arguments: tuple[tuple[str, str], ...]
    ) -> Callable[..., Any]:
        def watched(*args: Any, **kw: Any) -> Any:
            for index, (path_name, fd_name) in enumerate(arguments):
                path = args[index] if index < len(args) else kw[path_name]
                self.check(f"os.{name}", path, kw.get(fd_name))
            return real(*args, **kw)

        return watched


_AUDIT: list[_Watch] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Python-level ``open()`` for writing (it does not go through ``os.open``)."""
    if event == "open" and _AUDIT and isinstance(args[1], str):
        path, mode = args[0], args[1]
        if any(c in mode for c in "wax+") and not isinstance(path, int):
            _AUDIT[-1].check("open()", path, None)


sys.addaudithook(_audit)

plants = st.lists(
    st.tuples(st.sampled_from(FOLDERS), st.sampled_from(NAMES), st.sampled_from(KINDS)),
    min_size=1,
    max_size=4,
)


@pytest.mark.timeout(120)  # a FIFO opened for reading would block forever
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plants=plants,
    listed=st.lists(st.integers(min_value=0, max_value=3), max_size=3),
    raw_lines=st.lists(st.sampled_from([b"../outside/secret.txt", b"\xff", b"x/secret.txt"])),
    rendered_is_link=st.booleans(),
)
def test_nothing_outside_the_root_is_touched_or_shown(
    template: Path,
    plants: list[tuple[str, str | bytes, str]],
    listed: list[int],
    raw_lines: list[bytes],
    rendered_is_link: bool,
) -> None:
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        base = Path(folder)
        outside = base / "outside"
        (outside / "folder").mkdir(parents=True)
        (outside / "secret.txt").write_bytes(SECRET + b"\n")
        (outside / "folder" / "kustomization.yaml").write_bytes(SECRET + b"\n")
        root = base / "repo"
        shutil.copytree(template, root)
        rendered = root / "rendered"
        planted = [_plant(rendered, outside, *plant) for plant in plants]
        lines = [planted[i] for i in listed if i < len(planted) and planted[i]] + raw_lines
        record = rendered / ".dsf-files"
        if lines and not record.is_symlink() and record.is_file():
            with record.open("ab") as file:
                file.write(b"".join(line + b"\n" for line in lines))
        if rendered_is_link:
            shutil.move(rendered, outside / "rendered")
            rendered.symlink_to(outside / "rendered")
        before = _snapshot(outside)

        watch = _Watch(root)
        watch.install(patch)
        _AUDIT.append(watch)
        try:
            for command in (
                ["render"],
                ["render", "--check"],
                ["diff"],
                ["diff", "--format", "markdown"],
            ):
                out, err = io.StringIO(), io.StringIO()
                code = run(["--root", str(root), *command], out, err)
                text = out.getvalue() + err.getvalue()
                assert code in (0, 1, 2), text
                assert "Traceback" not in text
                assert SECRET.decode() not in text, command
        finally:
            _AUDIT.pop()
        patch.undo()
        assert not watch.violations
        assert _snapshot(outside) == before
        temporary = {
            os.fsencode(os.path.relpath(os.path.join(parent, name), rendered))
            for parent, _, files in os.walk(root)
            for name in files
            if name.endswith((".dsf-tmp", ".dsf-old", ".tmp"))
        }
        assert temporary <= set(planted)  # only what was planted, nothing of ours
