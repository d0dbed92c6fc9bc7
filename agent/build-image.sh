#!/usr/bin/env bash
# Build the dsf-agent container image with no network in the build.
#
#   agent/build-image.sh [--base IMAGE] [--tag TAG]
#
# 1. On this machine: a wheelhouse in build/agent-image/ (git-ignored) holding the
#    project's wheel and the wheels of exactly the distributions the agent loads
#    (python3 -m agent.image_deps), at the versions installed here;
# 2. podman build (docker build when podman is absent) with --network none and
#    --build-arg BASE_IMAGE=IMAGE, that folder as the build context.
#
# IMAGE: any image with python3 (3.11 or later) and its venv module, of the same
# minor version as the python3 running this script (PYTHON=... picks another);
# default docker.io/library/python:<that version>-slim. TAG: default
# localhost/dsf-agent:VERSION, the compiler's version.
# Exit 0 means the image TAG exists locally.
set -euo pipefail

usage() { echo "usage: agent/build-image.sh [--base IMAGE] [--tag TAG]" >&2; exit 2; }

python="${PYTHON:-python3}"
base=""
tag=""
while [ $# -gt 0 ]; do
  case "$1" in
    --base) [ $# -ge 2 ] || usage; base="$2"; shift 2 ;;
    --base=*) base="${1#--base=}"; shift ;;
    --tag) [ $# -ge 2 ] || usage; tag="$2"; shift 2 ;;
    --tag=*) tag="${1#--tag=}"; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
  esac
done

cd "$(dirname "$0")/.."
version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
base="${base:-docker.io/library/python:${version}-slim}"
tag="${tag:-localhost/dsf-agent:$("$python" -c 'from dsf_compile import __version__; print(__version__)')}"

if command -v podman >/dev/null; then
  engine=podman
elif command -v docker >/dev/null; then
  engine=docker
else
  echo "error: neither podman nor docker is installed" >&2
  exit 1
fi

wheelhouse=build/agent-image
rm -rf "$wheelhouse"
mkdir -p "$wheelhouse/project" "$wheelhouse/deps"
"$python" -m agent.image_deps > "$wheelhouse/requirements.txt"
"$python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
  --wheel-dir "$wheelhouse/project" .
"$python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
  --wheel-dir "$wheelhouse/deps" --requirement "$wheelhouse/requirements.txt"
echo "$version" > "$wheelhouse/python-version"

"$engine" build --network none --build-arg "BASE_IMAGE=$base" \
  --file agent/Containerfile --tag "$tag" "$wheelhouse"
"$engine" image inspect "$tag" >/dev/null
echo "built $tag from $base"
