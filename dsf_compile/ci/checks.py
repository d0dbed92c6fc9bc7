"""The checks ``dsf-compile ci`` runs, in the order ``fleet-repo.md`` gives, each an
:class:`~dsf_compile.ci.steps.Outcome`.

The comparing commands' exit codes are the contract: 0 same, 1 differs, 2 could not
compare. A check that could not compare fails, and says why.
"""

from __future__ import annotations

import re
from pathlib import Path

from dsf_compile.ci.steps import MAX_ANNOTATIONS, Outcome, Ran, dsf, problems_of
from dsf_contract.problem import Problem
from dsf_contract.records import frozen

RENDER_HINT = "run 'dsf-compile render' and commit rendered/"
SCHEMAS_HINT = "run 'dsf-compile schemas' and commit schemas/"
_STALE_SCHEMA = re.compile(r"^schemas/(\S+) is stale")


@frozen
class Fleet:
    """Where the checks run: the fleet's folder, and its path in the repository."""

    root: Path
    #: The fleet's folder relative to the repository's top, ``""`` or ending in ``/``.
    prefix: str
    #: Where the processes run (the repository's top).
    cwd: Path


def validate(fleet: Fleet, *, strict: bool) -> Outcome:
    """``validate [--strict]``: the inputs and every rule between them."""
    argv = ["validate", "--format", "json", *(["--strict"] if strict else [])]
    ran = dsf(fleet.root, argv, cwd=fleet.cwd)
    document = ran.document()
    problems = problems_of(document, fleet.prefix)
    if ran.code == 0:
        line = f"{document.get('scorers', 0)} scorer(s), {document.get('clusters', 0)} cluster(s)"
        return Outcome("validate", "passed", line, problems)
    problems = problems or _unlocated(ran, fleet)
    return Outcome("validate", "failed", _count(problems), problems)


def render_check(fleet: Fleet) -> Outcome:
    """``render --check``: ``rendered/`` is what the inputs and the lockfile give."""
    ran = dsf(fleet.root, ["render", "--check", "--format", "json"], cwd=fleet.cwd)
    document = ran.document()
    problems = problems_of(document, fleet.prefix)
    if ran.code == 0:
        return Outcome("render --check", "passed", "rendered/ is current", problems)
    changes = [c for c in document.get("changes", ()) if isinstance(c, dict)]
    if ran.code == 1 and changes:
        for change in changes[:MAX_ANNOTATIONS]:
            message = (
                f"rendered/ is stale: this file would be {change.get('change')}; {RENDER_HINT}"
            )
            problems.append(Problem(fleet.prefix + str(change.get("path")), 1, 1, "", message))
        line = f"rendered/ is stale ({len(changes)} file(s)): {RENDER_HINT}"
        return Outcome("render --check", "failed", line, problems)
    problems = problems or _unlocated(ran, fleet)
    return Outcome("render --check", "failed", f"could not compare: {_count(problems)}", problems)


def schemas_check(fleet: Fleet) -> Outcome:
    """``schemas --check``: ``schemas/`` is what this compiler's models give."""
    ran = dsf(fleet.root, ["schemas", "--check", "--format", "text"], cwd=fleet.cwd)
    if ran.code == 0:
        return Outcome("schemas --check", "passed", "schemas/ is current")
    stale = [m[1] for m in map(_STALE_SCHEMA.match, ran.out.splitlines()) if m]
    if ran.code == 1 and stale:
        problems = [
            Problem(f"{fleet.prefix}schemas/{name}", 1, 1, "", f"stale; {SCHEMAS_HINT}")
            for name in stale[:MAX_ANNOTATIONS]
        ]
        line = f"schemas/ is stale ({len(stale)} file(s)): {SCHEMAS_HINT}"
        return Outcome("schemas --check", "failed", line, problems)
    problems = _unlocated(ran, fleet)
    return Outcome("schemas --check", "failed", f"could not compare: {_count(problems)}", problems)


def diff(fleet: Fleet, head: Path, state: list[str], base: str) -> tuple[Outcome, bool]:
    """``diff`` of the base branch's ``rendered/`` (in ``head``, a copy of the pull request's
    fleet) against the pull request's inputs; and whether anything changes."""
    argv = ["diff", *state]
    ran = dsf(head, [*argv, "--format", "markdown"], cwd=fleet.cwd)
    # a diff that differs always says how; exit 1 with nothing said is a refusal (a guard)
    if ran.code == 0 or (ran.code == 1 and ran.out.strip()):
        said = "no change" if ran.code == 0 else "changes (below)"
        return Outcome("diff", "passed", f"against {base}: {said}", markdown=ran.out), ran.code == 1
    located = dsf(head, [*argv, "--format", "json"], cwd=fleet.cwd)
    problems = problems_of(located.document(), fleet.prefix) or _unlocated(ran, fleet)
    line = f"against {base}: could not compare: {_count(problems)}"
    return Outcome("diff", "failed", line, problems, ran.out), False


def _unlocated(ran: Ran, fleet: Fleet) -> list[Problem]:
    """A failed run's stderr, as problems about the fleet as a whole."""
    lines = ran.error_lines() or [f"exited {ran.code} without saying why"]
    where = fleet.prefix.rstrip("/") or "."
    return [Problem(where, 0, 0, "", line.removeprefix("dsf-compile: error: ")) for line in lines]


def _count(problems: list[Problem]) -> str:
    errors = sum(1 for p in problems if p.severity == "error")
    return f"{errors} error(s)"


def backtest(
    fleet: Fleet, base: Path, window: tuple[str, str], work: Path, options: list[str]
) -> Outcome:
    """``backtest`` of the pull request, with the base branch's run as ``--baseline``.

    Both runs read the same window of the same source, each for the scores its own
    Placements rank by: a Placement the pull request moves to another score is replayed on
    that score's history, not on the base branch's.
    """
    history = ["--from", window[0], "--to", window[1], *options[:2]]
    ran = dsf(base, ["backtest", *history, "--format", "json"], cwd=fleet.cwd)
    if ran.code != 0:
        problems = _unlocated(ran, fleet)
        return Outcome(
            "backtest", "failed", f"the base branch's run failed: {_count(problems)}", problems
        )
    saved = work / "backtest-base.json"
    saved.write_text(ran.out, encoding="utf-8")
    argv = ["backtest", *history, "--baseline", str(saved), *options[2:], "--format", "markdown"]
    ran = dsf(fleet.root, argv, cwd=fleet.cwd)
    if ran.code == 0:
        return Outcome("backtest", "passed", "replayed (below)", markdown=ran.out)
    problems = _unlocated(ran, fleet)
    if ran.code == 1:
        return Outcome("backtest", "failed", "over --max-changes-per-day", problems, ran.out)
    return Outcome("backtest", "failed", f"could not compare: {_count(problems)}", problems)
