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

python="${PYTHON:-python3}"
base=""
tag=""
while [ $# -gt 0 ]; do
  case "$1" in
    --base) [ $# -ge 2 ] || usage; base="$2"; shift 2 ;;
    --base=*) base="${1#--base=}"; shift ;;
    --tag) [ $# -ge 2 ] || usage; tag="$2"; shift 2 ;;
    --tag=*) tag="${1#--tag=}"; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
  esac
done

cd "$(dirname "$0")/.."
version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
base="${base:-docker.io/library/python:${version}-slim}"
tag="${tag:-localhost/dsf-samples:$("$python" -c 'from dsf_compile import __version__; print(__version__)')}"

if command -v podman >/dev/null; then
  engine=podman
elif command -v docker >/dev/null; then
  engine=docker
else
  echo "error: neither podman nor docker is installed" >&2
  exit 1
fi

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
echo "$version" > "$context/python-version"

"$engine" build --network none --build-arg "BASE_IMAGE=$base" \
  --file samples/Containerfile --tag "$tag" "$context"
"$engine" image inspect "$tag" >/dev/null
echo "built $tag from $base"
