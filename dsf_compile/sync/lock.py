"""The lockfile ``dsf.lock.json``: hashing, canonical encoding, reading and writing.

The encoding is canonical (sorted keys, two-space indent, LF, trailing newline, no
timestamps) so that an unchanged fleet gives an unchanged file.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationError

from dsf_compile.edges.files import read_regular_file
from dsf_compile.edges.journal_scope import Ownership
from dsf_compile.edges.untrusted import first_string_problem, redact
from dsf_compile.errors import ForeignJournalError, InputError, SyncError
from dsf_compile.inputs.scorer import DynamicScorerSpec
from dsf_contract.bounded_json import load_json
from dsf_contract.fields import Frozen, Health, SyncMode
from dsf_contract.problem import Problem
from dsf_contract.scoring_api import ScorerConfig
from dsf_contract.validation_errors import error_message, field_path

if TYPE_CHECKING:
    from dsf_compile.edges.replacement import Replaced

LOCKFILE = "dsf.lock.json"
#: A lockfile of thousands of scorers is a few MiB; anything far larger is not one.
MAX_LOCKFILE_BYTES = 64 * 1024 * 1024
#: What ``sync`` writes in the repository's folder: a journal there may name nothing else.
LOCKFILE_SCOPE = Ownership.files("sync", (LOCKFILE,))


class LockEntry(Frozen):
    """What the last sync learned about one scorer."""

    mode: SyncMode
    configURL: str
    health: Health
    reason: str = ""
    specHash: str
    config: ScorerConfig | None = None
    contentHash: str


class Lockfile(Frozen):
    """``dsf.lock.json``."""

    version: Literal[1] = 1
    scorers: dict[str, LockEntry] = Field(default_factory=dict)


def canonical_json(value: Any) -> str:
    """Sorted, compact, ASCII JSON: the input of every hash."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def sha256(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(value).encode()).hexdigest()


def spec_hash(spec: DynamicScorerSpec) -> str:
    """Hash of the whole spec an entry was made from (informational)."""
    return sha256(spec.model_dump(mode="json", exclude_none=True))


def make_entry(
    spec: DynamicScorerSpec, *, healthy: bool, reason: str = "", config: ScorerConfig | None = None
) -> LockEntry:
    """A lock entry for ``spec``, its content hash computed from what sync learned."""
    config_data = config.model_dump(mode="json", exclude_none=True) if config is not None else None
    health: Health = "Active" if healthy else "Inactive"
    content = {"health": health, "reason": reason, "config": config_data}
    return LockEntry(
        mode=spec.configSyncMode,
        configURL=redact(spec.configURL),  # a secret in the URL stays out of the lockfile
        health=health,
        reason=reason,
        specHash=spec_hash(spec),
        config=config,
        contentHash=sha256(content),
    )


def encode_lockfile(lock: Lockfile) -> str:
    data = lock.model_dump(mode="json", exclude_none=True)
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def read_lockfile(root: Path) -> tuple[Lockfile, list[Problem]]:
    """The lockfile at ``root``; an empty one when there is none.

    The file may have been edited by hand: it must be a regular file of at most
    :data:`MAX_LOCKFILE_BYTES`, its JSON is parsed with bounded nesting and numbers, and
    the ``/config`` documents in it are held to what sync would have accepted.
    """
    file = root / LOCKFILE
    if not os.path.lexists(file):
        return Lockfile(), []
    try:
        raw = read_regular_file(file, max_bytes=MAX_LOCKFILE_BYTES)
        data = load_json(raw)
    except json.JSONDecodeError as err:
        return Lockfile(), [_problem(f"cannot read lockfile: {err.msg}", err.lineno, err.colno)]
    except OSError as err:
        return Lockfile(), [_problem(f"lockfile {err.strerror}")]
    except ValueError as err:  # not UTF-8, too deep, a huge number
        return Lockfile(), [_problem(f"cannot read lockfile: {_short(err)}", 1, 1)]
    try:
        lock = Lockfile.model_validate(data)
    except ValidationError as err:
        problems = [
            Problem(
                LOCKFILE,
                0,
                0,
                field_path(e["loc"]),
                f"{error_message(e)}; run 'dsf-compile sync'",
            )
            for e in err.errors()
        ]
        return Lockfile(), problems
    problems = []
    for name, entry in sorted(lock.scorers.items()):
        if entry.config is None:
            continue
        found = first_string_problem(entry.config.model_dump(mode="json", exclude_none=True))
        if found is not None:
            field, _, reason = found.partition(": ")
            problems.append(
                Problem(
                    LOCKFILE,
                    0,
                    0,
                    f"scorers.{name}.config.{field}",
                    f"{reason}; run 'dsf-compile sync'",
                )
            )
    return (Lockfile(), problems) if problems else (lock, [])


def _problem(message: str, line: int = 0, column: int = 0) -> Problem:
    return Problem(LOCKFILE, line, column, "", f"{message}; run 'dsf-compile sync'")


def _short(err: ValueError) -> str:
    if isinstance(err, UnicodeDecodeError):
        return f"not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset {err.start})"
    return str(err)


def check_lockfile_target(root: Path) -> list[Problem]:
    """Problems that would keep sync from replacing the lockfile: something else in its place."""
    file = root / LOCKFILE
    try:
        mode = os.lstat(file).st_mode
    except FileNotFoundError:
        return []
    except OSError as err:
        return [Problem(LOCKFILE, 0, 0, "", f"cannot check the lockfile: {err.strerror}")]
    if stat.S_ISREG(mode):
        return []
    return [
        Problem(
            LOCKFILE, 0, 0, "", "must be a regular file (not a link, folder or FIFO): remove it"
        )
    ]


def write_lockfile(root: Path, lock: Lockfile) -> Replaced:
    """Replace the lockfile atomically, after removing what a killed sync left.

    Raises :class:`SyncError` when it cannot be written (disk full, a folder in its
    place); the previous lockfile is then left as it was.
    """
    from dsf_compile.edges.replacement import replace_files  # only sync writes it

    data = encode_lockfile(lock).encode("utf-8")
    try:  # the repository's folder as the user named it: links above it are followed
        return replace_files(
            root.resolve(), {LOCKFILE: data}, label="", error=SyncError, scope=LOCKFILE_SCOPE
        )
    except ForeignJournalError:
        raise  # located at the journal, as it is
    except InputError as error:  # something else than a regular file in its place
        message = error.problems[0].message
        raise SyncError(f"cannot write {LOCKFILE}: {message}") from None
    except SyncError as error:
        cause = error.__cause__
        reason = (cause.strerror or str(cause)) if isinstance(cause, OSError) else str(error)
        raise SyncError(
            f"cannot write {LOCKFILE}: {reason}; the previous lockfile is unchanged"
        ) from None
