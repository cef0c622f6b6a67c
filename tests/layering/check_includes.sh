#!/usr/bin/env bash
# Include rules between the project's wings (docs/architecture.md "Layers").
# Prints every violating line as FILE:LINE: #include ... and exits 1 when
# there is one. Usage: check_includes.sh SOURCE_DIR
set -u
src="${1:?usage: check_includes.sh SOURCE_DIR}"
cd "$src" || exit 2
bad=0
# rule DIRS PATTERN WHY: no file under DIRS includes a header matching PATTERN.
rule() {
  local dirs="$1" pattern="$2" why="$3" hits
  # shellcheck disable=SC2086
  hits=$(grep -rnE --include='*.h' --include='*.cc' --include='*.c' "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]($pattern)" $dirs 2>/dev/null)
  if [ -n "$hits" ]; then
    printf '%s\n' "$hits"
    printf '  ^ %s\n' "$why"
    bad=1
  fi
}
rule "agent dcuctl" 'controller/' "agent/ and dcuctl/ share only proto/, common/ and modelkit/ with the controller"
rule "modelkit common" 'controller/|agent/|dcuctl/' "modelkit/ and common/ are the lower wing: they include nothing above them"
rule "controller/core modelkit" 'grpc|grpcpp/|sqlite3|libpq|[a-z_/]*\.grpc\.pb\.h' "the core and modelkit include neither gRPC nor SQLite nor libpq"
rule "controller/core" 'controller/(service|adapters)/|controller/store/(sqlite|pg_)' "the core depends on the store's interfaces, never on the service, the adapters, SQLite or PostgreSQL code"
exit $bad
