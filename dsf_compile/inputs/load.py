"""Input files → plain documents: reading and listing the repository's YAML files.

This is the only module that reads input files: size- and encoding-checked, then parsed
by the bounded YAML reader the agent shares (:mod:`dsf_contract.bounded_yaml`).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from dsf_compile.edges.files import FileTooLargeError, NotRegularFileError, read_regular_file
from dsf_contract.bounded_yaml import Document, parse_yaml
from dsf_contract.problem import Problem
from dsf_contract.records import frozen

MAX_FILE_BYTES = 10 * 1024 * 1024
SETTINGS_FILE = "dsf.yaml"
#: The input folders, in the order they are read.
INPUT_FOLDERS = ("scorers", "clusters", "placements")


def read_yaml_file(
    root: Path, relative: str, *, max_bytes: int | None = None
) -> tuple[list[Document], list[Problem]]:
    """Read and parse one file below ``root`` (size- and encoding-checked).

    ``max_bytes`` defaults to :data:`MAX_FILE_BYTES`, the cap of hand-written inputs;
    snapshots of a hub's state pass a larger one.
    """
    limit = MAX_FILE_BYTES if max_bytes is None else max_bytes
    try:
        # Not file.read_bytes(): a FIFO in its place would block forever, a link lead anywhere.
        raw = read_regular_file(root / relative, max_bytes=limit)
    except FileTooLargeError:
        return [], [
            Problem(relative, 0, 0, "", f"file is larger than {limit // (1024 * 1024)} MiB")
        ]
    except NotRegularFileError as err:
        return [], [Problem(relative, 0, 0, "", f"file {err.strerror}")]
    except OSError as err:
        return [], [Problem(relative, 0, 0, "", f"cannot read file: {err.strerror}")]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - raw.rfind(b"\n", 0, err.start)
        message = f"file is not UTF-8 text (byte 0x{raw[err.start]:02x}); save it as UTF-8"
        return [], [Problem(relative, line, column, "", message)]
    if not text.strip():
        return [], [Problem(relative, 0, 0, "", "file is empty")]
    return parse_yaml(text, relative)


_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: The files an input folder holds: YAML, by any letter case of the extension.
INPUT_SUFFIXES = (".yaml", ".yml")
#: Files an input folder may hold that are not inputs and are skipped without a word:
#: hidden files and folders (``.gitkeep``) and Markdown notes (``README.md``).
SKIPPED_SUFFIXES = (".md",)
#: How deep sub-folders are read (``scorers/team-a/x.yaml`` is depth 1).
MAX_FOLDER_DEPTH = 8


def list_input_files(
    root: Path, folder: str, *, suffixes: tuple[str, ...] = INPUT_SUFFIXES
) -> tuple[list[str], list[Problem]]:
    """Every YAML file below ``root/folder``, sub-folders included, as sorted relative paths.

    ``.yaml`` and ``.yml`` (or ``suffixes``) in any letter case are read. Hidden entries
    and ``*.md`` are skipped; anything else is a problem, so that no file is silently
    left out. Links are problems too: they could point out of the repository.
    """
    directory = root / folder
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        return [], [Problem(folder, 0, 0, "", "must be a folder")]
    if not directory.is_dir():
        return [], []
    files: list[str] = []
    problems: list[Problem] = []
    _list_folder(directory, folder, 0, suffixes, files, problems)
    return files, problems


def _list_folder(
    directory: Path,
    relative: str,
    depth: int,
    suffixes: tuple[str, ...],
    files: list[str],
    problems: list[Problem],
) -> None:
    try:
        entries = sorted(directory.iterdir(), key=lambda p: p.name)
    except OSError as err:
        problems.append(Problem(relative, 0, 0, "", f"cannot list the folder: {err.strerror}"))
        return
    for entry in entries:
        name = entry.name
        path = f"{relative}/{name}"
        if name.startswith("."):
            continue
        if entry.is_symlink():
            problems.append(Problem(path, 0, 0, "", "must be a regular file or folder, not a link"))
        elif entry.is_dir():
            if not _SAFE_NAME.fullmatch(name):
                problems.append(
                    Problem(path, 0, 0, "", "folder name must be letters, digits, '.', '_' or '-'")
                )
            elif depth >= MAX_FOLDER_DEPTH:
                problems.append(
                    Problem(path, 0, 0, "", f"nested deeper than {MAX_FOLDER_DEPTH} folders")
                )
            else:
                _list_folder(entry, path, depth + 1, suffixes, files, problems)
        elif name.lower().endswith(SKIPPED_SUFFIXES):
            continue
        elif not name.lower().endswith(suffixes):
            read = " and ".join(", ".join(f"*{s}" for s in suffixes).rsplit(", ", 1))
            problems.append(
                Problem(
                    path,
                    0,
                    0,
                    "",
                    f"is not read: only {read} files are (hidden files and *.md are "
                    "skipped); rename it or move it out of this folder",
                )
            )
        elif not _SAFE_NAME.fullmatch(name):
            problems.append(
                Problem(path, 0, 0, "", "file name must be letters, digits, '.', '_' or '-'")
            )
        elif not _is_plain_file(entry):
            problems.append(
                Problem(path, 0, 0, "", "must be a regular file (not a FIFO or device)")
            )
        else:
            files.append(path)


def _is_plain_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return True  # reading it reports why it cannot be read


@frozen
class InputFiles:
    """A repository's inputs as read, not yet validated: ``dsf.yaml``'s document (None
    without one), the documents of the input folders in reading order, and what reading
    found, ``dsf.yaml``'s problems apart (they come first, before its validation's)."""

    settings_document: Document | None
    settings_problems: tuple[Problem, ...]
    documents: tuple[Document, ...]
    problems: tuple[Problem, ...]


def read_settings_file(root: Path) -> tuple[Document | None, list[Problem]]:
    """``dsf.yaml``'s document (None without one) and what reading it found."""
    if not os.path.lexists(root / SETTINGS_FILE):  # a dangling link or a FIFO is reported
        return None, []
    documents, problems = read_yaml_file(root, SETTINGS_FILE)
    if len(documents) > 1:
        problems.append(Problem(SETTINGS_FILE, 1, 1, "", "must hold one YAML document"))
    return (documents[0] if documents else None), problems


def read_inputs(root: Path) -> InputFiles:
    """Read ``dsf.yaml`` and every file of the input folders; nothing is validated here, so
    that a caller may look at some of them (sync, its scorers) before the rest is."""
    settings_document, settings_problems = read_settings_file(root)
    documents: list[Document] = []
    problems: list[Problem] = []
    for folder in INPUT_FOLDERS:
        files, found = list_input_files(root, folder)
        problems += found
        for relative in files:
            docs, found = read_yaml_file(root, relative)
            problems += found
            documents += docs
    if not (root / "scorers").is_dir() and not (root / "clusters").is_dir():
        problems.append(
            Problem(".", 0, 0, "", "no scorers/ or clusters/ folder here (use --root DIR)")
        )
    return InputFiles(
        settings_document, tuple(settings_problems), tuple(documents), tuple(problems)
    )
