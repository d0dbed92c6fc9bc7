# Sourced (not run) by agent/build-image.sh and samples/build-image.sh: what building
# either image from a local build context, with no network in the build, shares — their
# common options, the Python version the context is made for, the default base and tag,
# the container engine and the build itself. Each script defines usage and other_option
# (its own options) and sets python, base and tag before calling these.

# option_value OPTION ARGS...: when ARGS begins with "OPTION VALUE" or "OPTION=VALUE",
# sets value to VALUE and taken to the number of arguments that was; else returns 1.
option_value() {
  local option="$1"
  shift
  case "$1" in
    "$option") [ $# -ge 2 ] || usage; value="$2"; taken=2 ;;
    "$option"=*) value="${1#"$option"=}"; taken=1 ;;
    *) return 1 ;;
  esac
}

# read_options HELP_LAST ARGS...: reads --base IMAGE and --tag TAG (into base and tag) and
# -h/--help (prints the script's header comment, lines 2 to HELP_LAST, and exits 0); any
# other argument goes to the script's own other_option, which sets taken or calls usage.
read_options() {
  local help_last="$1"
  shift
  while [ $# -gt 0 ]; do
    if option_value --base "$@"; then
      base="$value"
    elif option_value --tag "$@"; then
      tag="$value"
    elif [ "$1" = -h ] || [ "$1" = --help ]; then
      sed -n "2,${help_last}p" "$0" | sed 's/^# \{0,1\}//'
      exit 0
    else
      other_option "$@"
    fi
    shift "$taken"
  done
}

# python_version: MAJOR.MINOR of $python, the version the build context is made for.
python_version() {
  "$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])'
}

# stamp_python CONTEXT: the Python version the context's wheels are made for, and the
# check the Containerfile runs first with it (scripts/check-python-version.py).
stamp_python() {
  python_version > "$1/python-version"
  cp "$(dirname "${BASH_SOURCE[0]}")/check-python-version.py" "$1/check-python-version.py"
}

# download_locked LOCK DEST: the wheels LOCK pins, downloaded into DEST, each checked against
# a digest LOCK names (pip --require-hashes, no dependency resolution): a wheel of another
# digest, or a version such as X==V+local, is refused and the script stops before any
# build; LOCK is copied into DEST's parent (the build context), where the Containerfile
# installs the same wheels with --require-hashes again.
download_locked() {
  local lock="$1" dest="$2"
  mkdir -p "$dest"
  "$python" -m pip download --quiet --disable-pip-version-check --no-deps \
    --require-hashes --only-binary :all: --dest "$dest" --requirement "$lock"
  cp "$lock" "$(dirname "$dest")/$(basename "$lock")"
}

# print_digests CONTEXT: the SHA-256 of every wheel in CONTEXT's folders, one a line.
print_digests() {
  "$python" - "$1" <<'PY'
import hashlib, pathlib, sys
house = pathlib.Path(sys.argv[1])
for path in sorted(house.glob("*/*.whl")):
    print(f"sha256:{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.relative_to(house)}")
PY
}

# project_version: the compiler's version, the images' default tag.
project_version() {
  "$python" -c 'from dsf_compile import __version__; print(__version__)'
}

# default_base: the slim Python image of python_version.
default_base() {
  echo "docker.io/library/python:$(python_version)-slim"
}

# find_engine: sets engine to podman, or docker where podman is absent; exits 1 without.
find_engine() {
  if command -v podman >/dev/null; then
    engine=podman
  elif command -v docker >/dev/null; then
    engine=docker
  else
    echo "error: neither podman nor docker is installed" >&2
    exit 1
  fi
}

# build_image CONTAINERFILE CONTEXT [BUILD-ARG...]: builds $tag from $base with no network,
# each BUILD-ARG (NAME=VALUE) passed on, and checks that the image exists.
build_image() {
  local containerfile="$1" context="$2" arg
  shift 2
  local args=(--build-arg "BASE_IMAGE=$base")
  for arg in "$@"; do
    args+=(--build-arg "$arg")
  done
  "$engine" build --network none "${args[@]}" --file "$containerfile" --tag "$tag" "$context"
  "$engine" image inspect "$tag" >/dev/null
}
