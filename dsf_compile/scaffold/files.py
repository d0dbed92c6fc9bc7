"""The scaffold's files: which template becomes which file, and the placeholders they hold."""

from __future__ import annotations

import re
from importlib import resources
from importlib.metadata import PackageNotFoundError, metadata

from dsf_compile.errors import UsageError
from dsf_contract import __version__
from dsf_contract.records import frozen

#: The distribution whose project URLs name this project's repository.
DISTRIBUTION = "ocm-dynamic-scoring"
#: Each template (under ``fleet/``) and the file it becomes in the new repository.
TEMPLATES: tuple[tuple[str, str], ...] = (
    ("dsf.yaml", "dsf.yaml"),
    ("scorers/example-scorer.yaml", "scorers/example-scorer.yaml"),
    ("clusters/inventory.yaml", "clusters/inventory.yaml"),
    ("placements/example.yaml", "placements/example.yaml"),
    ("placements/bindings.yaml", "placements/bindings.yaml"),
    ("snapshots/README.md", "snapshots/README.md"),
    ("workflows/fleet.yaml", ".github/workflows/fleet.yaml"),
    ("workflows/scheduled.yaml", ".github/workflows/scheduled.yaml"),
    ("gitignore", ".gitignore"),
    ("README.md", "README.md"),
)
#: The top-level entries ``init`` writes (what it moves into the new repository).
TOP_LEVEL = (
    *sorted({target.split("/", 1)[0] for _, target in TEMPLATES}),
    "dsf.lock.json",
    "rendered",
    "schemas",
)

# GitHub's rules: an owner of letters, digits and single hyphens; a repository name of
# letters, digits, '.', '_', '-'; an optional folder in it; a ref of Git's safe characters.
_ACTION_RE = re.compile(
    r"(?P<repo>[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100})"
    r"(?P<path>(?:/[A-Za-z0-9._-]{1,100}){0,8})@(?P<ref>[A-Za-z0-9._/-]{1,200})"
)


@frozen
class Action:
    """``OWNER/REPO[/PATH]@REF``: the GitHub Action the scaffold's workflows use."""

    repository: str
    path: str
    ref: str

    def __str__(self) -> str:
        return f"{self.repository}{self.path}@{self.ref}"


def parse_action(text: str) -> Action:
    """``--action``: ``OWNER/REPO@REF`` (or ``OWNER/REPO/PATH@REF``); UsageError otherwise."""
    found = _ACTION_RE.fullmatch(text)
    if found is None or ".." in text or found["ref"].startswith(("-", "/")):
        raise UsageError(f"--action {text!r}: expected OWNER/REPO@REF (a GitHub Action by tag)")
    return Action(found["repo"], found["path"], found["ref"])


def default_action() -> Action:
    """This project's repository (its ``pyproject.toml`` project URLs) at ``v<version>``."""
    try:
        urls = metadata(DISTRIBUTION).get_all("Project-URL") or []
    except PackageNotFoundError:
        urls = []
    for entry in urls:
        label, _, url = entry.partition(",")
        found = re.fullmatch(r"https://github\.com/([^/\s]+/[^/\s]+?)(?:\.git)?/?", url.strip())
        if label.strip().lower() == "repository" and found:
            return parse_action(f"{found[1]}@v{__version__}")
    raise UsageError(
        f"{DISTRIBUTION}'s metadata names no GitHub repository: give --action OWNER/REPO@REF"
    )


def scaffold_files(action: Action, image: str) -> dict[str, str]:
    """Every file of the scaffold (path in the new repository → text), placeholders filled."""
    pin = f"{DISTRIBUTION} @ git+https://github.com/{action.repository}@v{__version__}"
    values = {"@ACTION@": str(action), "@VERSION@": __version__, "@IMAGE@": image, "@PIN@": pin}
    folder = resources.files(__package__ or "dsf_compile.scaffold").joinpath("fleet")
    files = {}
    for template, target in TEMPLATES:
        text = folder.joinpath(template).read_text(encoding="utf-8")
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        files[target] = text
    return files
