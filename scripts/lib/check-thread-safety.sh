#!/usr/bin/env bash
# Clang thread-safety analysis over the project's own translation units
# (issue 13), which also proves they, and the fuzz targets, compile with
# clang (issue 14). The build is g++, which ignores ABSL_GUARDED_BY & co.; this runs
# clang++ -fsyntax-only (no code generation, so it costs a fraction of a
# second build) with the flags of build/compile_commands.json, every
# thread-safety warning an error, in parallel. Which TUs: see below. Also
# -Wthread-safety-beta, which checks ABSL_ACQUIRED_AFTER/BEFORE lock orders.
#
# Usage: check-thread-safety.sh [BUILD_DIR]   (default: $DCU_BUILD_DIR or build)
#   DCU_TSA_ONLY=REGEX checks only the TUs whose path matches (while editing);
#   DCU_TSA_TIMES=FILE writes each TU's seconds there, slowest first;
#   DCU_TSA_LIST=1 only lists what would be checked and what skipped.
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
# -Wthread-safety-beta adds checks still under development in clang-14 (the
# lock orders among them) and is on because the tree is clean under it. Nothing else is reported: the g++
# build owns the other warnings.
TSA_FLAGS=(-fsyntax-only -Wno-everything
           -Wthread-safety -Wthread-safety-beta
           -Werror=thread-safety -Werror=thread-safety-beta)

# Which TUs. The analysis can only report code that uses thread-safety
# annotations or absl::Mutex: in the TU's own file, or inline in a header it
# includes, which clang analyses identically in every TU that includes it.
# So every TU outside tests/ is checked (the product; also proves it parses
# with clang), and a test TU only when its own file has such code or it
# includes an annotated project header that no other checked TU includes.
# The ~50 test TUs are the most expensive (gtest, gmock, the harness), and
# only two of them lock anything themselves. DCU_TSA_ALL=1 checks them all.
#
# Each selected TU becomes a file of NUL-separated fields: the directory, the
# source, then the compile command's arguments without what syntax-only does
# not need: the output, -c, debug info and warning switches (ours come last
# and are the only ones). Generated sources (under the build tree: *.pb.cc,
# embedded migrations) and C files (the fake vendor libraries) are skipped;
# replay_main.cc, built once per fuzz target with the same flags, is checked
# once.
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/tu" "$WORK/out"
python3 - "$DB" "$BUILD_DIR" "$REPO_ROOT" "$WORK" "${DCU_TSA_ONLY:-}" "${DCU_TSA_ALL:-0}" <<'EOF'
import json, os, re, shlex, sys
db, build_dir, repo_root, work, only, check_all = sys.argv[1:7]
build_dir = os.path.realpath(build_dir)
ANNOTATED = re.compile(r"ABSL_[A-Z_]*(GUARDED|LOCK|ACQUIRED|THREAD_SAFETY)|absl::Mutex|"
                       r"absl/synchronization/")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
texts, closures = {}, {}

def text(path):
    if path not in texts:
        try:
            texts[path] = open(path, errors="replace").read()
        except OSError:
            texts[path] = ""
    return texts[path]

def closure(path):
    """Project headers `path` includes, transitively (quoted includes under
    the two include roots, the source tree and the build tree)."""
    if path in closures:
        return closures[path]
    closures[path] = set()  # cycles (guarded headers) end here
    out = set()
    for inc in INCLUDE.findall(text(path)):
        for root in (repo_root, build_dir):
            h = os.path.join(root, inc)
            if os.path.isfile(h):
                out.add(h)
                out |= closure(h)
                break
    closures[path] = out
    return out

UNITY = re.compile(r"unity_[0-9]+_cxx\.cxx$")
UNITY_INCLUDE = re.compile(r'^\s*#\s*include\s*"(/[^"]+\.cc)"', re.M)

# A CMake unity file (CMAKE_UNITY_BUILD) is checked as it is built: one
# clang run over the batch, which parses the heavy headers (protobuf, gRPC,
# abseil) once for all its sources instead of once per source. The analysis
# is per function, so batching changes no finding, and a finding still names
# the source file and line. A batch counts as the sources it includes for
# the selection below.
def members(entry):
    f = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
    if UNITY.search(f):
        return f, [os.path.realpath(g) for g in UNITY_INCLUDE.findall(text(f))]
    return f, [f]

def own(f):
    return (f.endswith(".cc") and not f.startswith(build_dir + os.sep)
            and f.startswith(repo_root + os.sep))

tus, seen = [], set()   # (file clang compiles, [project sources in it], entry)
for entry in json.load(open(db)):
    f, srcs = members(entry)
    srcs = [g for g in srcs if own(g) and g not in seen and (not only or re.search(only, g))]
    if not srcs:
        continue
    seen.update(srcs)
    if only and len(srcs) > 1:  # while editing: only the sources asked for
        tus.extend((g, [g], entry) for g in srcs)
    else:
        tus.append((f, srcs, entry))

def annotated_headers(t):
    return {h for g in t[1] for h in closure(g) if ANNOTATED.search(text(h))}

def own_code_annotated(t):
    return any(ANNOTATED.search(text(g)) for g in t[1])

is_test = lambda f: os.path.relpath(f, repo_root).startswith("tests" + os.sep)
# The fuzz targets' own TUs always: scripts/fuzz builds them with clang, and
# a clang-only error there (issue 14: a non-constexpr absl::StrFormat format
# string) must fail scripts/test, not the opt-in fuzz run. -fsanitize=fuzzer
# does not change what parses; the product TUs they link are checked above.
is_fuzz = lambda f: os.path.relpath(f, repo_root).startswith(os.path.join("tests", "fuzz") + os.sep)
selected = [t for t in tus if check_all == "1" or only or not all(map(is_test, t[1]))
            or any(map(is_fuzz, t[1])) or own_code_annotated(t)]
covered = set()
for t in selected:
    covered |= annotated_headers(t)
rest = [t for t in tus if t not in selected]
while True:  # greedy cover of annotated headers only test TUs include
    best, gain = None, set()
    for t in rest:
        g = annotated_headers(t) - covered
        if len(g) > len(gain):
            best, gain = t, g
    if not best:
        break
    selected.append(best)
    rest.remove(best)
    covered |= gain

for n, (f, _, entry) in enumerate(selected):
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
    with open(os.path.join(work, "tu", "%04d" % n), "w") as out:
        out.write("\0".join([entry["directory"], f] + kept))
with open(os.path.join(work, "skipped"), "w") as out:
    out.write("".join(os.path.relpath(g, repo_root) + "\n" for _, srcs, _ in rest for g in srcs))
EOF

check_one() {  # $1: a tu/NNNN file written above; results go to out/NNNN.*
  local fields=()
  mapfile -d '' -t fields < "$1"
  local dir="${fields[0]}" file="${fields[1]}"
  local out="$WORK/out/$(basename "$1")"
  local t0=$SECONDS
  (cd "$dir" && "$CLANGXX" "${fields[@]:2}" "${TSA_FLAGS[@]}" "$file") > "$out.log" 2>&1 ||
    echo "$file" > "$out.failed"
  echo "$((SECONDS - t0)) $file" > "$out.time"
}
export -f check_one
export CLANGXX WORK
export TSA_FLAGS_STR="${TSA_FLAGS[*]}"

count=$(ls "$WORK/tu" | wc -l)
if [ -n "${DCU_TSA_LIST:-}" ]; then  # what would be checked, and what not
  for tu in "$WORK"/tu/*; do mapfile -d '' -t f < "$tu"; echo "check ${f[1]#"$REPO_ROOT/"}"; done
  sed 's/^/skip  /' "$WORK/skipped"
  exit 0
fi
skipped=$(wc -l < "$WORK/skipped")
if [ "$count" = 0 ]; then
  echo "check-thread-safety: no translation units in $DB" >&2
  exit 2
fi
echo "check-thread-safety: $count TUs ($skipped test TUs with nothing to check skipped), $(nproc) at a time, $($CLANGXX --version | head -1)" >&2
start=$SECONDS
# Bash arrays cannot be exported; the flags go through TSA_FLAGS_STR.
ls "$WORK"/tu/* | xargs -P "$(nproc)" -I{} bash -c 'TSA_FLAGS=($TSA_FLAGS_STR); check_one "$1"' _ {}
status=0
if [ -n "${DCU_TSA_TIMES:-}" ]; then cat "$WORK"/out/*.time | sort -rn > "$DCU_TSA_TIMES"; fi
for log in "$WORK"/out/*.log; do
  if [ -s "$log" ]; then cat "$log" >&2; fi
done
if compgen -G "$WORK/out/*.failed" >/dev/null; then
  echo "check-thread-safety: FAILED in:" >&2
  cat "$WORK"/out/*.failed | sed 's/^/  /' >&2
  status=1
fi
echo "check-thread-safety: $count TUs in $((SECONDS - start)) s, $([ $status = 0 ] && echo clean || echo 'findings above')" >&2
exit $status
