#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs tickwheel from build dir $1 into a temporary prefix (as
# `cmake --install build --prefix P` does for a user), checks what the
# install holds (the executable, the systemd unit pointing at it, the man
# page, the options file), then builds the consumer project against it
# with find_package and runs it (and, when the server was built, the
# program that uses the installed C++ client).
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cmake --install "$build_dir" --prefix "$tmp/prefix" >/dev/null
if [ -f "$build_dir/tickwheel" ]; then  # built with the executable
  p="$tmp/prefix"
  [ -x "$p/bin/tickwheel" ] || fail "bin/tickwheel was not installed"
  grep -qx "$p/bin/tickwheel" "$build_dir/install_manifest.txt" || fail "not in the manifest"
  "$p/bin/tickwheel" --version | grep -q "^tickwheel " || fail "tickwheel --version"
  grep -q "^ExecStart=$p/bin/tickwheel serve " "$p/lib/systemd/system/tickwheel.service" ||
    fail "the unit does not run the installed binary"
  [ -f "$p/share/man/man1/tickwheel.1.gz" ] || fail "no man page"
  [ -f "$p/etc/default/tickwheel" ] || fail "no options file"
fi
cmake -S "$source_dir" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/build" >/dev/null
"$tmp/build/consumer"
if [ -f "$build_dir/tickwheel" ]; then
  [ -f "$tmp/prefix/include/tickwheel/client.h" ] || fail "tickwheel/client.h was not installed"
  [ -x "$tmp/build/client_consumer" ] || fail "find_package(tickwheel) gave no tickwheel::client"
  "$tmp/build/client_consumer"
fi
