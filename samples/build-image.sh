#!/usr/bin/env bash
# Build the image of the reference Scoring APIs (every sample in samples/), with no
# network in the build.
#
#   samples/build-image.sh [--base IMAGE] [--tag TAG] [--context-only]
#
# 1. On this machine: a build context in build/samples-image/ (git-ignored) holding the
#    samples' sources and the wheels samples/requirements.lock pins by version and SHA-256
#    (numpy for the AI-workload scorer, httpx and jinja2 for the LLM forecast scorer, and
#    every dependency of theirs), downloaded with pip --require-hashes: a wheel of another
#    digest, or a version such as X==V+local, is refused and nothing is built. The
#    SHA-256 of every wheel is printed. --context-only stops here.
# 2. podman build (docker build when podman is absent) with --network none and
#    --build-arg BASE_IMAGE=IMAGE, samples/Containerfile on that context: the wheels are
#    installed again with --require-hashes.
#
# IMAGE: any image with python3 (3.11 or later) and its venv module, of the same minor
# version as the python3 running this script (PYTHON=... picks another); default
# docker.io/library/python:<that version>-slim. TAG: default
# localhost/dsf-samples:VERSION, the compiler's version.
# Run one sample: podman run IMAGE samples.static_scorer --host 0.0.0.0
# Exit 0 means the image TAG exists locally.
set -euo pipefail

usage() {
  echo "usage: samples/build-image.sh [--base IMAGE] [--tag TAG] [--context-only]" >&2
  exit 2
}
. "$(dirname "$0")/../scripts/image-build.sh"

other_option() {
  if [ "$1" = --context-only ]; then
    context_only=1
    taken=1
  else
    usage
  fi
}

python="${PYTHON:-python3}"
base=""
tag=""
context_only=""
read_options 22 "$@"

cd "$(dirname "$0")/.."
base="${base:-$(default_base)}"
tag="${tag:-localhost/dsf-samples:$(project_version)}"

context=build/samples-image
rm -rf "$context"
mkdir -p "$context/samples"
cp samples/*.py "$context/samples/"
download_locked samples/requirements.lock "$context/deps"
print_digests "$context"
stamp_python "$context"
if [ -n "$context_only" ]; then
  echo "build context ready in $context"
  exit 0
fi

find_engine
build_image samples/Containerfile "$context"
echo "built $tag from $base"
