#!/usr/bin/env bash
# Download the pinned OCM CRDs of .ci/ocm-crds.txt into DIR, each checked against its
# sha256; then point the tests at them with DSF_OCM_CRDS=DIR. Nothing lands in DIR unless
# every file arrived whole and matched.
#   .ci/fetch-ocm-crds.sh DIR
# DSF_CRDS_BASE_URL replaces https://raw.githubusercontent.com (a mirror, or the tests).
set -euo pipefail
if [ "$#" -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dest="$1"
list="$(dirname "$0")/ocm-crds.txt"
base="${DSF_CRDS_BASE_URL:-https://raw.githubusercontent.com}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

while read -r name repository commit path sha256; do
  case "$name" in '' | '#'*) continue ;; esac
  case "$name" in
    */* | .*) echo "$list: bad file name $name" >&2; exit 1 ;;
    *.crd.yaml) ;;
    *) echo "$list: bad file name $name" >&2; exit 1 ;;
  esac
  # a CRD is tens of kB: 1 MiB bounds what a wrong answer can cost
  curl --fail --silent --show-error --location --proto '=https,http' --max-time 60 \
    --max-filesize 1048576 --output "$work/$name" "$base/$repository/$commit/$path"
  echo "$sha256  $work/$name" >> "$work/SHA256SUMS"
done < "$list"

sha256sum --check --quiet --strict "$work/SHA256SUMS"
rm "$work/SHA256SUMS"
mkdir -p "$dest"
mv "$work"/*.crd.yaml "$dest"/
echo "$(ls "$dest" | wc -l) OCM CRD file(s) in $dest, checksums verified"
