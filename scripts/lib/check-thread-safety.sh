#!/usr/bin/env bash
# Clang thread-safety analysis over the project's own translation units
# (issue 13). The build is g++, which ignores ABSL_GUARDED_BY & co.; this runs
# clang++ -fsyntax-only (no code generation, so it costs a fraction of a
# second build) with the flags of build/compile_commands.json, every
# thread-safety warning an error. It checks every non-generated C++ TU the
# build has, not a guessed subset: a TU that includes no annotated header
# costs little and cannot then be missed.
#
# Usage: check-thread-safety.sh [BUILD_DIR]   (default: $DCU_BUILD_DIR or build)
# Needs: clang++ (clang-14 on Debian 12), and the build's generated headers
# (*.pb.h), so run it after the build. Exits non-zero, with file:line of
# every finding, when any TU has one.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${1:-${DCU_BUILD_DIR:-$REPO_ROOT/build}}"
DB="$BUILD_DIR/compile_commands.json"
CLANGXX="${DCU_CLANGXX:-$(command -v clang++-14 || command -v clang++ || true)}"
if [ -z "$CLANGXX" ]; then
  echo "check-thread-safety: clang++ not found (install the 'clang' package)" >&2
  exit 2
fi
if [ ! -f "$DB" ]; then
  echo "check-thread-safety: $DB missing (configure the build first)" >&2
  exit 2
fi

# -Wthread-safety is the analysis (attributes, analysis, precise, reference);
# -Wthread-safety-beta adds checks still under development in clang-14 and is
# on because the tree is clean under it. Nothing else is reported: the g++
# build owns the other warnings.
TSA_FLAGS=(-fsyntax-only -Wno-everything
           -Wthread-safety -Wthread-safety-beta
           -Werror=thread-safety -Werror=thread-safety-beta)

# One line per TU: the directory, then the compile command's arguments
# (NUL-separated) with what syntax-only does not need taken out: the output,
# -c, debug info and warning switches (ours come last and are the only ones).
# Generated sources (under the build tree: *.pb.cc, embedded migrations) and
# C files (the fake vendor libraries) are skipped; replay_main.cc, built once
# per fuzz target with the same flags, is checked once.
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
python3 - "$DB" "$BUILD_DIR" "$REPO_ROOT" "$WORK" <<'EOF'
import json, os, shlex, sys
db, build_dir, repo_root, work = sys.argv[1:5]
build_dir = os.path.realpath(build_dir)
seen = set()
n = 0
for entry in json.load(open(db)):
    f = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
    if f in seen or not f.endswith(".cc"):
        continue
    if f.startswith(build_dir + os.sep) or not f.startswith(repo_root + os.sep):
        continue
    seen.add(f)
    args = entry.get("arguments") or shlex.split(entry["command"])
    kept, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a == "-o":
            skip = True
            continue
        if a in ("-c", "-g", "-w") or a.startswith("-W") or a == f or a == entry["file"]:
            continue
        kept.append(a)
    with open(os.path.join(work, "tu%04d" % n), "w") as out:
        out.write("\0".join([entry["directory"], f] + kept))
    n += 1
print(n, file=sys.stderr)
EOF

check_one() {  # $1: a tuNNNN file written above
  local fields=()
  mapfile -d '' -t fields < "$1"
  local dir="${fields[0]}" file="${fields[1]}"
  (cd "$dir" && "$CLANGXX" "${fields[@]:2}" "${TSA_FLAGS[@]}" "$file") > "$1.log" 2>&1 || echo "$file" >> "$1.failed"
}
export -f check_one
export CLANGXX
export TSA_FLAGS_STR="${TSA_FLAGS[*]}"

count=$(ls "$WORK" | wc -l)
echo "check-thread-safety: $count TUs, $(nproc) at a time, $($CLANGXX --version | head -1)" >&2
start=$SECONDS
# Bash arrays cannot be exported; the flags go through TSA_FLAGS_STR.
ls "$WORK"/tu* | xargs -P "$(nproc)" -I{} bash -c 'TSA_FLAGS=($TSA_FLAGS_STR); check_one "$1"' _ {}
status=0
for log in "$WORK"/tu*.log; do
  if [ -s "$log" ]; then cat "$log" >&2; fi
done
if compgen -G "$WORK/*.failed" >/dev/null; then
  echo "check-thread-safety: FAILED in:" >&2
  cat "$WORK"/*.failed | sed 's/^/  /' >&2
  status=1
fi
echo "check-thread-safety: $count TUs in $((SECONDS - start)) s, $([ $status = 0 ] && echo clean || echo 'findings above')" >&2
exit $status
