"""Sharded fleet: every Application's ``kubectl kustomize`` output against the project's 64 MiB.

A generated fleet (``render_bench.generate_fleet``: half Full scorers, masks by label) is
rendered by a whole ``dsf-compile render`` with the default ``render.shardBytes`` (or the
one given) and ``render.shards`` pinned at the count that budget asks for (the budget
alone never chooses it), then ``kubectl kustomize`` builds the root (CRDs and hub objects) and every
shard, as Argo CD's repo server and Flux's kustomize-controller would. Printed: the number
of shards, the largest and the smallest output, and whether every rendered object came
out of exactly one build.

    PYTHONPATH=. python bench/shard_bench.py [--clusters 10000] [--scorers 100] [--shard-bytes N]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.command_bench import RowCells  # noqa: E402
from bench.render_bench import asked_shards, generate_fleet, render_command  # noqa: E402

#: The project's limit (docs/gitops.md): every Application's / Flux Kustomization's kustomize output at most this.
LIMIT_BYTES = 64 * 1024 * 1024

Identity = tuple[str, str, str]


def identities(yaml_text: str) -> list[Identity]:
    """(kind, namespace, name) of every document of kustomize's output, read line by line.

    Parsing hundreds of MB of YAML would cost minutes; kustomize writes each document's
    ``kind:`` and its ``metadata:`` keys at fixed indentation, which is all this needs.
    """
    out = []
    for document in yaml_text.split("\n---\n"):
        kind = namespace = name = ""
        in_metadata = False
        for line in document.splitlines():
            if not line.startswith(" "):
                in_metadata = line == "metadata:"
                if line.startswith("kind: "):
                    kind = line[6:]
            elif in_metadata and line.startswith("  name: "):
                name = line[8:]
            elif in_metadata and line.startswith("  namespace: "):
                namespace = line[13:]
        if kind:
            out.append((kind, namespace, name))
    return out


def expected_identities(rendered: Path) -> Counter[Identity]:
    """Every object file of ``rendered/`` (bootstrap and kustomizations aside), once each."""
    found: Counter[Identity] = Counter()
    for path in rendered.rglob("*.yaml"):
        relative = path.relative_to(rendered)
        if path.name == "kustomization.yaml" or relative.parts[0] == "bootstrap":
            continue
        found.update(identities(path.read_text(encoding="utf-8")))
    return found


def kustomize(folder: Path) -> str:
    done = subprocess.run(
        ["kubectl", "kustomize", str(folder)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"kubectl kustomize {folder} failed: {done.stderr[-2000:]}")
    return done.stdout


def asked_count(root: Path) -> int:
    """The number of shards ``root``'s ``render.shardBytes`` asks for (an in-process render
    with the count unset: one shard, which the budget is held against)."""
    from dsf_compile.pipeline.inputs import plan_fleet
    from dsf_compile.render.manifests import render_manifests

    plan = plan_fleet(root)
    return asked_shards(plan, render_manifests(plan))


def measure(clusters: int, scorers: int, shard_bytes: int | None = None) -> dict[str, float]:
    """Render the fleet (whole command) and build the root and every shard with kustomize."""
    if shutil.which("kubectl") is None:
        raise SystemExit("kubectl (with its built-in kustomize) is needed")
    with tempfile.TemporaryDirectory(prefix="dsf-bench-shards-") as tmp:
        root = Path(tmp)
        generate_fleet(root, clusters, scorers)
        budget = f"render:\n  shardBytes: {shard_bytes}\n" if shard_bytes else "render:\n"
        (root / "dsf.yaml").write_text(budget)
        (root / "dsf.yaml").write_text(f"{budget}  shards: {asked_count(root)}\n")
        seconds, _ = render_command(root)
        rendered = root / "rendered"
        shards = (
            sorted(p for p in (rendered / "shards").iterdir())
            if (rendered / "shards").is_dir()
            else []
        )
        started = time.perf_counter()
        seen: Counter[Identity] = Counter(identities(kustomize(rendered)))
        sizes = []
        for shard in shards:
            output = kustomize(shard)
            sizes.append(len(output.encode("utf-8")))
            seen.update(identities(output))
        build = time.perf_counter() - started
        exact = seen == expected_identities(rendered) and max(seen.values(), default=1) == 1
    return {
        "render": seconds,
        "kustomize": build,
        "shards": len(shards),
        "largest": max(sizes, default=0),
        "smallest": min(sizes, default=0),
        "objects": sum(seen.values()),
        "exactly once": float(exact),
    }


#: ``--quick``: a budget small enough to shard a fleet of ten clusters.
QUICK_SHARD_BYTES = 2000


def shard_rows(clusters: int, scorers: int, quick: bool) -> list[RowCells]:
    """``python -m bench``'s rows: the largest Application, and every object exactly once."""
    figures = measure(clusters, scorers, QUICK_SHARD_BYTES if quick else None)
    workload = f"{clusters} clusters × {scorers} scorers, {int(figures['shards'])} shards"
    largest = figures["largest"]
    exact = bool(figures["exactly once"])
    return [
        ("shards", "largest Application's kustomize output", workload,
         f"{largest / 2**20:.1f} MiB", "limit 64 MiB", largest / LIMIT_BYTES, "≤ 64 MiB",
         None if quick else largest <= LIMIT_BYTES),
        ("shards", "objects across the root and every shard", workload,
         f"{int(figures['objects'])}", "rendered objects", 1.0, "each exactly once", exact),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=10_000)
    parser.add_argument("--scorers", type=int, default=100)
    parser.add_argument("--shard-bytes", type=int, default=None, help="default: the setting's")
    args = parser.parse_args()
    figures = measure(args.clusters, args.scorers, args.shard_bytes)
    print(f"{args.clusters} clusters × {args.scorers} scorers")
    print(f"  render (command)        {figures['render']:.1f} s")
    print(f"  shards                  {int(figures['shards'])}")
    print(f"  largest shard output    {figures['largest'] / 2**20:.1f} MiB (limit 64 MiB)")
    print(f"  smallest shard output   {figures['smallest'] / 2**20:.1f} MiB")
    print(f"  objects, exactly once   {int(figures['objects'])}, {bool(figures['exactly once'])}")
    print(f"  kustomize, all builds   {figures['kustomize']:.1f} s")


if __name__ == "__main__":
    main()
