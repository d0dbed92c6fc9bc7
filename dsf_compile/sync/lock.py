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


def encode_lockfile(lock: Lockfile, text: LockfileText | None = None) -> str:
    """The lockfile's canonical text; ``text`` may hold some entries already encoded."""
    return (text or LockfileText()).encode(lock)


def _dumps(data: Any) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False)


#: Where the scorers' entries go in the lockfile's text (a key json escapes, so no value
#: can look like it).
_ENTRIES = json.dumps("\x00scorers")
#: Each entry's block stands three levels deep: in the document, in ``scorers``, its own.
_ENTRY_PAD = "    "


class LockfileText:
    """The lockfile's text, made of each entry's block: ``json.dumps`` of the whole file
    (sorted keys, two-space indent) is the blocks of its entries, each that entry's own
    ``json.dumps`` shifted to its depth (a JSON string holds no line break), in the order
    of their names. A sync encodes each scorer's entry as it comes (:meth:`add`), while it
    waits for the others; what was not added, or changed since, is encoded at the end."""

    def __init__(self) -> None:
        self._blocks: dict[str, tuple[LockEntry, str]] = {}

    def add(self, name: str, entry: LockEntry) -> None:
        """Encode ``entry``, the entry of scorer ``name``, now."""
        self._blocks[name] = (entry, self._block(name, entry))

    def encode(self, lock: Lockfile) -> str:
        """``lock``'s text: every entry's block, reused when it encodes the same entry."""
        if not self._blocks:  # one dump of the whole file: a third less work than by entry
            return _dumps(lock.model_dump(mode="json", exclude_none=True)) + "\n"
        data = lock.model_dump(mode="json", exclude_none=True, exclude={"scorers"})
        if not lock.scorers:
            return _dumps({**data, "scorers": {}}) + "\n"
        blocks = []
        for name in sorted(lock.scorers):
            entry = lock.scorers[name]
            done = self._blocks.get(name)
            blocks.append(
                done[1] if done is not None and done[0] is entry else self._block(name, entry)
            )
        entries = "{\n" + ",\n".join(blocks) + "\n  }"
        return _dumps({**data, "scorers": "\x00scorers"}).replace(_ENTRIES, entries, 1) + "\n"

    @staticmethod
    def _block(name: str, entry: LockEntry) -> str:
        encoded = _dumps(entry.model_dump(mode="json", exclude_none=True))
        return f"{_ENTRY_PAD}{json.dumps(name, ensure_ascii=False)}: " + encoded.replace(
            "\n", "\n" + _ENTRY_PAD
        )


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


def load_writer() -> None:
    """Load what :func:`write_lockfile` needs: a sync does it while the answers are awaited,
    so that the import is not paid after the last one."""
    from dsf_compile.edges import replacement  # noqa: F401


def write_lockfile(root: Path, lock: Lockfile, text: LockfileText | None = None) -> Replaced:
    """Replace the lockfile atomically, after removing what a killed sync left; ``text``
    may hold entries already encoded.

    Raises :class:`SyncError` when it cannot be written (disk full, a folder in its
    place); the previous lockfile is then left as it was.
    """
    from dsf_compile.edges.replacement import replace_files  # only sync writes it

    data = encode_lockfile(lock, text).encode("utf-8")
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
