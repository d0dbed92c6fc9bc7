"""``dsf-compile ci``: the checks in order, then the report where the workflow shows it.

validate → ``render --check`` and ``schemas --check`` → on a pull request (or with
``--base``) ``diff`` of the base branch's ``rendered/`` against the pull request's inputs,
the decisions replayed on the scores snapshot → ``backtest`` with the base branch's run as
``--baseline`` when a history is given → the report (a file, the job summary, the pull
request's comment) → every problem an annotation. The exit code is the checks' verdict,
decided after the report is written; the comment never changes it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TextIO

from dsf_compile.ci import base as base_tree
from dsf_compile.ci import checks, report
from dsf_compile.ci.steps import Outcome
from dsf_compile.edges import github
from dsf_compile.errors import UsageError
from dsf_contract.escaping import github_message
from dsf_contract.problem import Problem
from dsf_contract.records import frozen

#: The history ``backtest`` replays: this many days up to the run's start.
HISTORY_DAYS = 7
_SCORE_FILES = (".yaml", ".yml", ".json")


@frozen
class Options:
    """``dsf-compile ci``'s options (an empty text is "not given", as the action passes them)."""

    base: str
    scores: str
    at: str
    history: str
    max_changes_per_day: str
    strict: bool
    comment: bool
    report: str
    github: bool


@frozen
class Verdict:
    """What ``ci`` found: the report, whether anything changes, and whether a check failed."""

    text: str
    changed: bool
    failed: bool


def run_ci(root: Path, options: Options, environ: Mapping[str, str], out: TextIO) -> Verdict:
    """Run every check, write the report where it goes; return the verdict."""
    if options.max_changes_per_day and not options.history:
        raise UsageError("ci: --max-changes-per-day gates the backtest: give --history too")
    with tempfile.TemporaryDirectory(prefix="dsf-ci-", dir=environ.get("RUNNER_TEMP")) as work:
        outcomes, changed = _checks(root, options, environ, Path(work))
    text = report.report(outcomes)
    _publish(text, changed, options, environ, out)
    for line in report.annotation_lines(outcomes) if options.github else ():
        print(line, file=out)
    return Verdict(text, changed, any(o.failed for o in outcomes))


def _checks(
    root: Path, options: Options, environ: Mapping[str, str], work: Path
) -> tuple[list[Outcome], bool]:
    fleet = _fleet(root)
    valid = checks.validate(fleet, strict=options.strict)
    outcomes = [valid]
    if valid.failed:
        outcomes.append(
            Outcome("render --check", "skipped", "not compared: the inputs are invalid")
        )
    else:
        outcomes.append(checks.render_check(fleet))
    outcomes.append(checks.schemas_check(fleet))
    request = github.pull_request(environ)
    base_ref = options.base or (_base_sha(request) if request else "")
    if valid.failed or not base_ref:  # a push: the checks alone
        return outcomes, False
    label = _label(None if options.base else request, base_ref)
    try:
        base, head = _trees(fleet, base_ref, work)
    except base_tree.BaseTreeError as error:
        line = f"against {label}: the base branch cannot be read: {error}"
        outcomes.append(Outcome("diff", "failed", line, [Problem(".", 0, 0, "", line)]))
        return outcomes, False
    diffed, changed = checks.diff(fleet, head, _state(root, options), label)
    outcomes.append(diffed)
    if options.history:
        limit = ["--max-changes-per-day", options.max_changes_per_day]
        extra = [
            "--history",
            _history(options.history),
            *(limit if options.max_changes_per_day else []),
        ]
        outcomes.append(checks.backtest(fleet, base, _window(), work, extra))
    return outcomes, changed


def _history(history: str) -> str:
    """A history file named from here, as the checks (run elsewhere) find it; a URL as given."""
    if history.startswith(("http://", "https://")) or not Path(history).exists():
        return history
    return str(Path(history).resolve())


def _fleet(root: Path) -> checks.Fleet:
    """The fleet's folder and where it sits in its repository (none: the folder itself)."""
    resolved = root.resolve()
    try:
        top, prefix = base_tree.top_and_prefix(resolved)
    except base_tree.BaseTreeError:
        return checks.Fleet(resolved, "", resolved)
    return checks.Fleet(resolved, prefix, top)


def _trees(fleet: checks.Fleet, ref: str, work: Path) -> tuple[Path, Path]:
    """The base branch's fleet folder, and a copy of the pull request's inputs holding the
    base branch's ``rendered/``."""
    commit = base_tree.resolve_commit(fleet.cwd, ref)
    base = base_tree.export_folder(fleet.cwd, commit, fleet.prefix, work / "base")
    head = base_tree.head_with_base_rendered(fleet.root, base, work / "head")
    return base, head


def _base_sha(request: Mapping[str, object]) -> str:
    """The event's base commit, else its base branch (an event written by hand)."""
    base = request.get("base")
    found = [base.get(key) for key in ("sha", "ref")] if isinstance(base, dict) else []
    return next((f for f in found if isinstance(f, str) and f and not f.startswith("-")), "")


def _label(request: Mapping[str, object] | None, ref: str) -> str:
    base = request.get("base") if request else None
    name = base.get("ref") if isinstance(base, dict) else None
    short = ref[:12] if len(ref) == 40 else ref
    return f"{name} ({short})" if isinstance(name, str) and name not in ("", ref) else short


def _state(root: Path, options: Options) -> list[str]:
    """``--scores`` (default: ``snapshots/`` when it holds YAML or JSON) and ``--at``."""
    scores = Path(options.scores).resolve() if options.scores else root.resolve() / "snapshots"
    given = options.scores or (
        scores.is_dir() and any(p.suffix in _SCORE_FILES for p in scores.iterdir())
    )
    argv = ["--scores", str(scores)] if given else []
    return [*argv, *(["--at", options.at] if options.at and given else [])]


def _window() -> tuple[str, str]:
    end = datetime.now(UTC).replace(microsecond=0)
    start = end - timedelta(days=HISTORY_DAYS)
    return start.isoformat().replace("+00:00", "Z"), end.isoformat().replace("+00:00", "Z")


def _publish(
    text: str, changed: bool, options: Options, environ: Mapping[str, str], out: TextIO
) -> None:
    """The report to its file, the job summary, the outputs and the pull request."""
    path = Path(options.report) if options.report else None
    if path is not None:
        path.write_text(text, encoding="utf-8")
    if not options.github:
        out.write(text)
    where = github.run_url(environ) or "the job summary"
    summary = report.cut(text, report.SUMMARY_LIMIT, "this run's log")
    github.append_file("GITHUB_STEP_SUMMARY", summary, environ)
    outputs = f"changed={str(changed).lower()}\n" + (f"report={path}\n" if path else "")
    github.append_file("GITHUB_OUTPUT", outputs, environ)
    request = github.pull_request(environ)
    if not (options.comment and request and isinstance(request.get("number"), int)):
        return
    body = report.cut(text, report.COMMENT_LIMIT, f"the job summary of {where}")
    posted = github.post_comment(body, int(request["number"]), environ, report.MARKER)
    if posted.outcome in ("created", "edited"):
        print(f"dsf-compile: the report's comment {posted.outcome} ({posted.detail})", file=out)
        return
    words = (
        f"the pull request's comment was not written: {posted.detail}; "
        "the report is in the job summary"
    )
    print(f"::{posted.outcome}::{github_message(words)}", file=out)
