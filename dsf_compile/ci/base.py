"""The base branch's tree beside the pull request's, read from Git, never into the checkout.

``diff`` compares ``rendered/`` with the inputs of the same folder, so the pull request's
inputs are copied and the base branch's ``rendered/`` put into
the copy; ``backtest --baseline`` runs on the base branch's whole fleet folder. Both come
out of ``git archive``, unpacked with tarfile's ``data`` filter (no link, device or path
out of the folder).
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

from dsf_compile.errors import DsfError

#: How long one git command may take.
GIT_TIMEOUT_SECONDS = 300.0


class BaseTreeError(DsfError):
    """The base branch's tree cannot be read (not fetched, not a repository)."""


def git(cwd: Path, *argv: str) -> str:
    """``git ARGV…`` in ``cwd``; BaseTreeError with git's own words when it fails."""
    try:
        done = subprocess.run(
            ["git", *argv], cwd=cwd, capture_output=True, text=True,
            timeout=GIT_TIMEOUT_SECONDS, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as err:
        raise BaseTreeError(f"git {argv[0]}: {err}") from None
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        raise BaseTreeError(f"git {argv[0]}: {said[0]}")
    return done.stdout


def top_and_prefix(root: Path) -> tuple[Path, str]:
    """The repository's top folder and the fleet's folder in it (``""`` or ``dir/``)."""
    top = Path(git(root, "rev-parse", "--show-toplevel").strip())
    return top, git(root, "rev-parse", "--show-prefix").strip()


def resolve_commit(top: Path, ref: str) -> str:
    """``ref``'s commit (a commit, or a branch as ``origin/BRANCH`` or ``BRANCH``), fetching
    it once when the checkout does not have it."""
    if not ref or ref.startswith("-"):
        raise BaseTreeError(f"{ref!r} is not a commit or a branch")
    for name in (f"origin/{ref}", ref):
        try:
            return git(top, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}").strip()
        except BaseTreeError:
            pass
    try:
        git(top, "fetch", "--quiet", "--no-tags", "--depth=1", "origin", ref)
        return git(top, "rev-parse", "--verify", "--quiet", "FETCH_HEAD^{commit}").strip()
    except BaseTreeError:
        raise BaseTreeError(
            f"the base commit {ref} is not in the checkout and cannot be fetched: "
            "check out with fetch-depth: 0 (actions/checkout)"
        ) from None


def export_folder(top: Path, commit: str, prefix: str, target: Path) -> Path:
    """The fleet's folder as ``commit`` holds it, unpacked under ``target``; its path there
    (an empty folder when the commit has none)."""
    target.mkdir(parents=True, exist_ok=True)
    folder = target / prefix if prefix else target
    listed = git(top, "ls-tree", "--name-only", commit, "--", prefix or ".")
    if not listed.strip():
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    command = ["git", "archive", "--format=tar", commit, "--", prefix or "."]
    with subprocess.Popen(command, cwd=top, stdout=subprocess.PIPE) as archive:
        assert archive.stdout is not None
        with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
            _extract(tar, target)
        if archive.wait(timeout=GIT_TIMEOUT_SECONDS) != 0:
            raise BaseTreeError(f"git archive {commit}: exit {archive.returncode}")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _extract(tar: tarfile.TarFile, target: Path) -> None:
    """Every member into ``target``: tarfile's ``data`` filter, or where Python predates it
    (3.11.3 and older), only regular files and folders inside ``target``."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(target, filter="data")
        return
    for member in tar:
        inside = not member.name.startswith("/") and ".." not in Path(member.name).parts
        if inside and (member.isfile() or member.isdir()):
            tar.extract(member, target)


def head_with_base_rendered(root: Path, base: Path, target: Path) -> Path:
    """A copy of the pull request's inputs (``root``) holding the base's ``rendered/``."""
    from dsf_compile.render.fastpath import INPUT_FILES, INPUT_FOLDERS

    target.mkdir(parents=True)
    for name in INPUT_FOLDERS:
        if (root / name).is_dir() and not (root / name).is_symlink():
            shutil.copytree(root / name, target / name, symlinks=True)
    for name in INPUT_FILES:
        if (root / name).is_file() and not (root / name).is_symlink():
            shutil.copy2(root / name, target / name)
    if (base / "rendered").is_dir():
        shutil.copytree(base / "rendered", target / "rendered", symlinks=True)
    else:
        (target / "rendered").mkdir()
    return target
