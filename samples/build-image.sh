#!/usr/bin/env bash
# Build the image of the reference Scoring APIs (every sample in samples/), with no
# network in the build.
#
#   samples/build-image.sh [--base IMAGE] [--tag TAG]
#
# 1. On this machine: a build context in build/samples-image/ (git-ignored) holding the
#    samples' sources and the wheels of what they import (numpy for the AI-workload
#    scorer, httpx and jinja2 for the LLM forecast scorer), at the versions installed here;
# 2. podman build (docker build when podman is absent) with --network none and
#    --build-arg BASE_IMAGE=IMAGE, samples/Containerfile on that context.
#
# IMAGE: any image with python3 (3.11 or later) and its venv module, of the same minor
# version as the python3 running this script (PYTHON=... picks another); default
# docker.io/library/python:<that version>-slim. TAG: default
# localhost/dsf-samples:VERSION, the compiler's version.
# Run one sample: podman run IMAGE samples.static_scorer --host 0.0.0.0
# Exit 0 means the image TAG exists locally.
set -euo pipefail

usage() { echo "usage: samples/build-image.sh [--base IMAGE] [--tag TAG]" >&2; exit 2; }
. "$(dirname "$0")/../scripts/image-build.sh"

other_option() { usage; }

python="${PYTHON:-python3}"
base=""
tag=""
read_options 18 "$@"

cd "$(dirname "$0")/.."
base="${base:-$(default_base)}"
tag="${tag:-localhost/dsf-samples:$(project_version)}"
find_engine

context=build/samples-image
rm -rf "$context"
mkdir -p "$context/samples" "$context/deps"
cp samples/*.py "$context/samples/"
# The versions installed here, so that the image runs what the tests ran.
"$python" - > "$context/requirements.txt" <<'PY'
from importlib.metadata import version
for name in ("numpy", "httpx", "jinja2"):
    print(f"{name}=={version(name)}")
PY
"$python" -m pip wheel --quiet --disable-pip-version-check --only-binary=:all: \
  --wheel-dir "$context/deps" --requirement "$context/requirements.txt"
stamp_python "$context"

build_image samples/Containerfile "$context"
echo "built $tag from $base"
