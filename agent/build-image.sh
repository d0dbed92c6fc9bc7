#!/usr/bin/env bash
# Build the dsf-agent container image with no network in the build.
#
#   agent/build-image.sh [--base IMAGE] [--tag TAG] [--sbom PATH] [--wheelhouse-only]
#
# 1. On this machine: a wheelhouse in build/agent-image/ (git-ignored): the wheels
#    agent/requirements.lock pins by version and SHA-256 (the agent's dependencies) and
#    agent/sbom-tools.lock (the SBOM generator, used in the build stage only), downloaded
#    with pip --require-hashes (a wheel of another digest, or a version such as
#    X==V+local, is refused and nothing is built), and the project's own wheel; the
#    SHA-256 of every wheel is printed. --wheelhouse-only stops here.
# 2. podman build (docker build when podman is absent) with --network none and
#    --build-arg BASE_IMAGE=IMAGE, that folder as the build context: the wheels are
#    installed again with --require-hashes, and a FROM scratch stage receives only what
#    the agent loads (agent_image/rootfs.py): no shell, package manager or compiler.
# 3. --sbom PATH: the image's CycloneDX JSON SBOM (agent_image/sbom.py, also inside the
#    image at /usr/share/doc/dsf-agent/sbom.cdx.json) is copied to PATH.
#
# IMAGE: any image with python3 (3.11 or later) and its venv module, of the same
# minor version as the python3 running this script (PYTHON=... picks another);
# default docker.io/library/python:<that version>-slim. TAG: default
# localhost/dsf-agent:VERSION, the compiler's version.
# Exit 0 means the image TAG exists locally (and PATH holds its SBOM).
set -euo pipefail

usage() {
  echo "usage: agent/build-image.sh [--base IMAGE] [--tag TAG] [--sbom PATH] [--wheelhouse-only]" >&2
  exit 2
}
. "$(dirname "$0")/../scripts/image-build.sh"

other_option() {
  if option_value --sbom "$@"; then
    sbom="$value"
  elif [ "$1" = --wheelhouse-only ]; then
    wheelhouse_only=1
    taken=1
  else
    usage
  fi
}

python="${PYTHON:-python3}"
base=""
tag=""
sbom=""
wheelhouse_only=""
read_options 24 "$@"
case "$sbom" in /*|"") ;; *) sbom="$PWD/$sbom" ;; esac

cd "$(dirname "$0")/.."
wheelhouse=build/agent-image

# The wheelhouse: every wheel checked against the digests the repository commits.
fill_wheelhouse() {
  rm -rf "$wheelhouse"
  mkdir -p "$wheelhouse/project" "$wheelhouse/deps" "$wheelhouse/tools"
  download_locked agent/requirements.lock "$wheelhouse/deps"
  download_locked agent/sbom-tools.lock "$wheelhouse/tools"
  # setuptools stages the package in build/lib and never empties it: a module moved or
  # deleted since an earlier build would ride along into the image
  rm -rf build/lib build/bdist.*
  "$python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
    --wheel-dir "$wheelhouse/project" .
  # the project's wheel, pinned by its own digest for the install in the build stage
  "$python" - "$wheelhouse" <<'PY'
import hashlib, pathlib, sys
house = pathlib.Path(sys.argv[1])
(wheel,) = (house / "project").glob("*.whl")
name, version = wheel.name.split("-")[:2]
digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
(house / "project.lock").write_text(f"{name}=={version} --hash=sha256:{digest}\n")
PY
  print_digests "$wheelhouse"
  # the image's build, run in its build stage from there (no wheel holds it)
  mkdir "$wheelhouse/agent_image"
  cp agent_image/*.py "$wheelhouse/agent_image/"
  stamp_python "$wheelhouse"
}

release="$(project_version)"
base="${base:-$(default_base)}"
tag="${tag:-localhost/dsf-agent:$release}"

fill_wheelhouse
if [ -n "$wheelhouse_only" ]; then
  echo "wheelhouse ready in $wheelhouse"
  exit 0
fi

find_engine
build_image agent/Containerfile "$wheelhouse" "VERSION=$release"
if [ -n "$sbom" ]; then
  # a container is created, never started: the image has nothing to run but the agent
  holder="dsf-agent-sbom-$$"
  "$engine" create --name "$holder" "$tag" >/dev/null
  trap '"$engine" rm --force "$holder" >/dev/null 2>&1 || true' EXIT
  "$engine" cp "$holder:/usr/share/doc/dsf-agent/sbom.cdx.json" "$sbom"
  echo "SBOM of $tag written to $sbom"
fi
echo "built $tag from $base"
