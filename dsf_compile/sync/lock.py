"""The lockfile ``dsf.lock.json``: hashing, canonical encoding, reading and writing.

The encoding is canonical (sorted keys, two-space indent, LF, trailing newline, no
timestamps) so that an unchanged fleet gives an unchanged file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from dsf_compile.errors import Problem
from dsf_compile.fields import Frozen, Health, SyncMode
from dsf_compile.files import atomic_write
from dsf_compile.inputs.scorer import DynamicScorerSpec
from dsf_compile.scoring_api import ScorerConfig

LOCKFILE = "dsf.lock.json"


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
        configURL=spec.configURL,
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
    """The lockfile at ``root``; an empty one when there is none."""
    file = root / LOCKFILE
    if not file.exists():
        return Lockfile(), []
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        line = getattr(err, "lineno", 0)
        column = getattr(err, "colno", 0)
        return Lockfile(), [
            Problem(
                LOCKFILE, line, column, "", f"cannot read lockfile: {err}; run 'dsf-compile sync'"
            )
        ]
    try:
        return Lockfile.model_validate(data), []
    except ValidationError as err:
        problems = [
            Problem(
                LOCKFILE,
                0,
                0,
                ".".join(str(p) for p in e["loc"]),
                f"{e['msg']}; run 'dsf-compile sync'",
            )
            for e in err.errors()
        ]
        return Lockfile(), problems


def write_lockfile(root: Path, lock: Lockfile) -> bool:
    """Replace the lockfile atomically; return whether its bytes changed."""
    file = root / LOCKFILE
    text = encode_lockfile(lock)
    if file.exists() and file.read_text(encoding="utf-8") == text:
        return False
    atomic_write(file, text.encode())
    return True
