# Shared by scripts/*: dependency install (idempotent) and build.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${DCU_BUILD_DIR:-$REPO_ROOT/build}"

# What builds and runs the product (controller, agent, dcuctl, gateway) and
# the demo's simulated fleet, from Debian 12's archive. scripts/demo installs
# only these, so a newcomer's first run downloads as little as it can.
DCU_PRODUCT_PACKAGES=(
  g++ cmake ninja-build pkg-config make ccache
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libsqlite3-dev libre2-dev libssl-dev openssl
  nlohmann-json3-dev libcli11-dev
  # dcuctl apply -f / edit read YAML manifests, as kubectl's (yaml-cpp).
  libyaml-cpp-dev
  # Boost.Beast/Asio (header-only) for dcu-gateway's HTTP front (issue 17).
  libboost-dev
  # Issue 18: prometheus-cpp's core (the exposition serializer and the
  # counters/histograms behind every /metrics, common/metrics.h).
  prometheus-cpp-dev
  # Issue 21: libpq, the client library of the PostgreSQL store (--db
  # postgres://...).
  libpq-dev
  # Issue 22: tcmalloc for dcu-controller (controller/CMakeLists.txt says
  # why; BENCHMARKS.md "An allocator for the controller").
  libgoogle-perftools-dev
  procps curl ca-certificates
)
# What only the tests and benchmarks need, on top (scripts/test).
DCU_TEST_PACKAGES=(
  sqlite3 libgtest-dev libgmock-dev googletest libbenchmark-dev
  # clang++ for the thread-safety check (check_thread_safety below; g++
  # ignores ABSL_GUARDED_BY and the other lock annotations), python3 for its
  # reading of compile_commands.json.
  clang python3
  # A static /bin/bash for the fake container images (tests/fakes/fake_vllm):
  # stacks source their env.sh inside the image with bash.
  bash-static
  # Issue 18: a real Prometheus server and promtool, which
  # tests/integration/observability_test runs against the three /metrics
  # endpoints, and chromium, headless, for the dashboard test.
  prometheus chromium
  # Issue 20: a real Slurm 22.05 (slurmctld, slurmd, sbatch/squeue/scancel/
  # scontrol/sinfo) that tests/testing/slurm_cluster starts on loopback in a
  # temporary directory. The packaged services stay down: their units need
  # /etc/slurm/slurm.conf, which nothing here writes.
  slurmctld slurmd slurm-client
  # Issue 21: a real PostgreSQL 15 server (initdb + postgres) that
  # tests/testing/pg_server starts on loopback in a temporary directory,
  # as nobody when the tests run as root. The packaged service is not used.
  postgresql-15
)
DCU_APT_PACKAGES=("${DCU_PRODUCT_PACKAGES[@]}" "${DCU_TEST_PACKAGES[@]}")

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Installs whatever of DCU_APT_PACKAGES (or of the packages named) is
# missing; does nothing when all are present (so it needs no network on a
# prepared machine).
ensure_deps() {
  local missing=() wanted=("$@")
  [ ${#wanted[@]} -gt 0 ] || wanted=("${DCU_APT_PACKAGES[@]}")
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then return 0; fi
  log "installing ${#missing[@]} Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Configures (once) and builds everything; binaries land in build/bin. A
# build directory first configured by scripts/demo (no GoogleTest then, so
# no tests) is switched to building the tests.
build_all() {
  if [ -f "$BUILD_DIR/CMakeCache.txt" ] && grep -q '^DCU_BUILD_TESTS:BOOL=OFF' "$BUILD_DIR/CMakeCache.txt"; then
    log "reconfiguring $BUILD_DIR with the tests"
    cmake -S "$REPO_ROOT" -B "$BUILD_DIR" -DDCU_BUILD_TESTS=ON >/dev/null
  fi
  build_targets
}

# build_targets [TARGET...]: configures once, then builds the targets named
# (all of them when none is): scripts/demo builds only what it runs, so a
# newcomer sees the fleet long before every test and benchmark is built.
build_targets() {
  local jobs="${DCU_JOBS:-$(nproc)}"
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    log "configuring in $BUILD_DIR"
    cmake -S "$REPO_ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  log "building ${*:-everything} (ninja -j$jobs)"
  ninja -C "$BUILD_DIR" -j "$jobs" "$@"
}

# Clang's thread-safety analysis over the project's own translation units
# (-fsyntax-only, flags from build/compile_commands.json, every finding an
# error). Run after build_all: it needs the generated headers. Fails, with
# file:line, on any finding. See scripts/lib/check-thread-safety.sh.
check_thread_safety() {
  log "thread-safety check (clang -Wthread-safety)"
  "$REPO_ROOT/scripts/lib/check-thread-safety.sh" "$BUILD_DIR"
}

# Short fuzz run (issue 8): builds the libFuzzer targets with clang in
# build-fuzz/ and runs each for DCU_FUZZ_SECONDS (default 8) seconds; about
# a minute of fuzzing for the 7 targets, plus the first build. Needs clang
# and libclang-rt-14-dev. scripts/test calls it when DCU_FUZZ_SMOKE=1.
run_fuzz_smoke() {
  ensure_deps clang libclang-rt-14-dev
  log "fuzz smoke: ${DCU_FUZZ_SECONDS:-8}s per target"
  "$REPO_ROOT/scripts/fuzz" --seconds "${DCU_FUZZ_SECONDS:-8}"
}
