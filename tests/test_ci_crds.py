"""The GitHub workflow proves what ``.ci/run`` proves: the same packages, and the pinned
OCM CRDs (``.ci/ocm-crds.txt``) fetched by a script.

The GitHub workflow downloads them with ``.ci/fetch-ocm-crds.sh``; ``.ci/run`` reads the
shared folder. The list must describe that folder's bytes exactly, and the script must
place exactly the listed files, or nothing when one does not match.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

from tests.fleet_repo import OCM_CRDS, REPO_ROOT

LIST = REPO_ROOT / ".ci" / "ocm-crds.txt"
SCRIPT = REPO_ROOT / ".ci" / "fetch-ocm-crds.sh"
WORKFLOW = REPO_ROOT / ".github" / "workflows" / "develop.yaml"


class Pinned(NamedTuple):
    name: str
    repository: str
    commit: str
    path: str
    sha256: str


def pinned() -> list[Pinned]:
    rows = []
    for line in LIST.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            rows.append(Pinned(*line.split()))
    return rows


def test_the_list_pins_full_commits_and_checksums() -> None:
    rows = pinned()
    assert rows
    assert len({r.name for r in rows}) == len(rows)
    for row in rows:
        assert row.name.endswith(".crd.yaml") and "/" not in row.name
        assert row.repository.startswith("open-cluster-management-io/")
        assert len(row.commit) == 40 and int(row.commit, 16) >= 0
        assert len(row.sha256) == 64 and int(row.sha256, 16) >= 0


def test_the_list_matches_the_crds_the_tests_read() -> None:
    if not OCM_CRDS.is_dir():
        pytest.skip(f"the OCM CRDs are not here ({OCM_CRDS})")
    here = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in OCM_CRDS.glob("*.crd.yaml")}
    assert here == {r.name: r.sha256 for r in pinned()}


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """raw.githubusercontent.com's layout on loopback, from the CRDs the tests read."""
    if not OCM_CRDS.is_dir():
        pytest.skip(f"the OCM CRDs are not here ({OCM_CRDS})")
    root = tmp_path / "mirror"
    for row in pinned():
        target = root / row.repository / row.commit / row.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(OCM_CRDS / row.name, target)
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def fetch(base: str, dest: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), str(dest)],
        env={"PATH": "/usr/bin:/bin", "DSF_CRDS_BASE_URL": base},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_script_places_every_listed_file_verified(mirror: tuple[str, Path], tmp_path) -> None:
    base, _ = mirror
    dest = tmp_path / "crds"
    done = fetch(base, dest)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in dest.iterdir()) == sorted(r.name for r in pinned())
    for row in pinned():
        assert (dest / row.name).read_bytes() == (OCM_CRDS / row.name).read_bytes()
    assert "checksums verified" in done.stdout


def test_a_changed_file_upstream_fails_and_places_nothing(
    mirror: tuple[str, Path], tmp_path
) -> None:
    base, root = mirror
    row = pinned()[0]
    with (root / row.repository / row.commit / row.path).open("a", encoding="utf-8") as stream:
        stream.write("# changed\n")
    dest = tmp_path / "crds"
    done = fetch(base, dest)
    assert done.returncode != 0
    assert "did NOT match" in done.stderr
    assert not dest.exists()


def test_a_missing_file_upstream_fails_and_places_nothing(
    mirror: tuple[str, Path], tmp_path
) -> None:
    base, root = mirror
    row = pinned()[-1]
    (root / row.repository / row.commit / row.path).unlink()
    dest = tmp_path / "crds"
    done = fetch(base, dest)
    assert done.returncode != 0
    assert "404" in done.stderr
    assert not dest.exists()


# ------------------------------------------------- the workflow proves what .ci/run does

#: What .ci/run installs only where the machine lacks it; GitHub's runners ship them.
ON_EVERY_RUNNER = {"kubectl", "kubernetes-client", "nodejs", "npm"}


def apt_packages(script: str) -> set[str]:
    found: set[str] = set()
    for match in re.finditer(r"apt-get install -y -qq ([^>|&;\n]+)", script):
        found.update(match.group(1).split())
    return found


def pip_extras(script: str) -> set[str]:
    return set(re.findall(r"pip install [^\n]*?'\.\[([a-z,]+)\]'", script))


def test_the_develop_workflow_installs_what_ci_run_does() -> None:
    ci_run = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps = workflow["jobs"]["checks"]["steps"]
    runs = "\n".join(step.get("run", "") for step in steps)
    assert apt_packages(ci_run) - ON_EVERY_RUNNER <= apt_packages(runs)
    assert pip_extras(ci_run) == pip_extras(runs) == {"test,optimize,mcp"}
    # the CRDs are fetched and the tests pointed at them before the tests run
    names = [step.get("name", "") for step in steps]
    fetch = next(i for i, s in enumerate(steps) if ".ci/fetch-ocm-crds.sh" in s.get("run", ""))
    assert 'DSF_OCM_CRDS=$RUNNER_TEMP/ocm-crds" >> "$GITHUB_ENV"' in steps[fetch]["run"]
    assert fetch < names.index("Tests")
