#!/usr/bin/env bash
# run_unprivileged.sh TEST_BINARY...: runs each GoogleTest binary as an
# unprivileged user (uid/gid of nobody, no supplementary groups, HOME and
# TMPDIR in a fresh directory of its own) and fails when any test fails.
# Run by ctest as root; as any other user the suite already ran unprivileged,
# so it skips (77), saying so.
set -uo pipefail
if [ "$(id -u)" != 0 ]; then
  echo "ctest runs as uid $(id -u): every agent test already ran unprivileged"
  exit 77
fi
user=nobody
uid="$(id -u "$user")" && gid="$(id -g "$user")" || { echo "no user '$user' on this host" >&2; exit 1; }

# The unprivileged user must be able to reach the checkout and the build
# (a clone under /root is not): say so and skip rather than blame the agent.
for path in "$DCU_SOURCE_DIR/tests/fixtures" "$1"; do
  if ! setpriv --reuid="$uid" --regid="$gid" --clear-groups test -r "$path"; then
    echo "'$path' is not readable by $user (a parent directory is private): not run unprivileged"
    exit 77
  fi
done

home="$(mktemp -d /tmp/dcu-unprivileged.XXXXXX)"
trap 'rm -rf "$home"' EXIT
chown "$uid:$gid" "$home"
failed=()
for bin in "$@"; do
  name="$(basename "$bin")"
  if ! setpriv --reuid="$uid" --regid="$gid" --clear-groups --reset-env \
      env HOME="$home" TMPDIR="$home" PATH="/usr/local/bin:/usr/bin:/bin" \
      DCU_SOURCE_DIR="$DCU_SOURCE_DIR" DCU_BIN_DIR="$DCU_BIN_DIR" \
      "$bin" --gtest_brief=1 >"$home/$name.log" 2>&1; then
    echo "== $name failed as $user (uid $uid):"
    tail -n 60 "$home/$name.log"
    failed+=("$name")
  else
    echo "$name: $(grep -E '^\[  PASSED  \]' "$home/$name.log" || echo passed) as $user"
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "failed as $user: ${failed[*]}"
  exit 1
fi
echo "all ${#} agent test binaries pass as $user (uid $uid)"
