#!/usr/bin/env bash
# docs/dcuctl.md must be what the binary says (scripts/lib/gen-dcuctl-doc.sh).
set -euo pipefail
repo=$1 dcuctl=$2
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$repo/scripts/lib/gen-dcuctl-doc.sh" "$dcuctl" "$tmp"
if ! diff -u "$repo/docs/dcuctl.md" "$tmp"; then
  echo "docs/dcuctl.md is out of date with dcuctl: run scripts/lib/gen-dcuctl-doc.sh build/bin/dcuctl docs/dcuctl.md" >&2
  exit 1
fi
