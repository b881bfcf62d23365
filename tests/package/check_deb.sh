#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian package from build dir $1 (as `make package` does) and
# checks it without installing it on this machine:
#   - lintian finds no error in it;
#   - it holds the executable, the systemd unit, the options file (a
#     conffile), the man page, the library, its headers and CMake config;
#   - it depends on adduser and on the runtime libraries, and its postinst
#     creates the tickwheel system user;
#   - the unit's ExecStart names a file the package installs, and
#     `systemd-analyze verify` accepts the unit (pointed at the extracted
#     binary) without a word;
#   - the installed tree's CMake config is found by find_package and the
#     library links and runs (tests/install_consumer);
#   - the extracted binary runs (--version).
set -euo pipefail
build_dir=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$build_dir" && cpack -G DEB -B "$tmp/cpack" -D CPACK_OUTPUT_FILE_PREFIX="$tmp/out" \
  >"$tmp/cpack.log" 2>&1) ||
  { cat "$tmp/cpack.log"; fail "cpack"; }
deb=$(ls "$tmp"/out/tickwheel_*.deb)
echo "package: $(basename "$deb")"

# lintian: no error (warnings and infos are listed, not fatal).
lintian --fail-on error --tag-display-limit 0 "$deb" >"$tmp/lintian.log" 2>&1 ||
  { cat "$tmp/lintian.log"; fail "lintian found errors"; }
grep -v 'running with root privileges' "$tmp/lintian.log" || true

# What it holds.
dpkg-deb --contents "$deb" | awk '{print $NF}' >"$tmp/contents"
for f in ./usr/bin/tickwheel ./usr/lib/systemd/system/tickwheel.service \
         ./etc/default/tickwheel ./usr/share/man/man1/tickwheel.1.gz \
         ./usr/share/doc/tickwheel/copyright ./usr/share/doc/tickwheel/changelog.gz \
         ./usr/include/tickwheel/wheel.h ./usr/include/tickwheel/timing_wheel.h \
         ./usr/include/tickwheel/client.h ./usr/include/tickwheel/webhook.h \
         ./usr/lib/cmake/tickwheel/tickwheelClientTargets.cmake ./usr/lib/libtickwheel_client.a \
         ./usr/lib/cmake/tickwheel/tickwheelConfig.cmake \
         ./usr/lib/cmake/tickwheel/tickwheelConfigVersion.cmake \
         ./usr/lib/cmake/tickwheel/tickwheelTargets.cmake ./usr/lib/libtickwheel.a; do
  grep -qx "$f" "$tmp/contents" || fail "$f is not in the package"
done

# Its control data.
dpkg-deb --field "$deb" Depends >"$tmp/depends"
for d in adduser librocksdb libpq5 libssl3; do
  grep -q "$d" "$tmp/depends" || fail "Depends lacks $d: $(cat "$tmp/depends")"
done
dpkg-deb --control "$deb" "$tmp/control"
grep -qx /etc/default/tickwheel "$tmp/control/conffiles" || fail "/etc/default/tickwheel is not a conffile"
grep -q 'adduser .*--system.* tickwheel' "$tmp/control/postinst" || fail "postinst creates no system user"
sh -n "$tmp/control/postinst"

# The unit: ExecStart is in the package, and systemd accepts the unit.
dpkg-deb -x "$deb" "$tmp/root"
unit="$tmp/root/usr/lib/systemd/system/tickwheel.service"
exec_start=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
[ "$exec_start" = /usr/bin/tickwheel ] || fail "ExecStart is $exec_start"
[ -x "$tmp/root$exec_start" ] || fail "ExecStart $exec_start is not in the package"
for key in User=tickwheel StateDirectory=tickwheel ProtectSystem=strict NoNewPrivileges=true \
           Restart=on-failure LimitNOFILE= TimeoutStopSec=; do
  grep -q "^$key" "$unit" || fail "the unit has no $key"
done
# Stopping waits longer than the server's default drain (--drain-timeout 30s).
stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)$/\1/p' "$unit")
[ "$stop" -gt 30 ] || fail "TimeoutStopSec=$stop is not above the 30 s drain"
sed "s|^ExecStart=$exec_start|ExecStart=$tmp/root$exec_start|" "$unit" >"$tmp/tickwheel.service"
verify=$(systemd-analyze verify --man=no "$tmp/tickwheel.service" 2>&1) ||
  fail "systemd-analyze verify: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify says: $verify"

# The binary runs; the installed CMake config finds the library.
"$tmp/root/usr/bin/tickwheel" --version | grep -q "^tickwheel " || fail "tickwheel --version"
cmake -S "$source_dir/tests/install_consumer" -B "$tmp/consumer" \
  -DCMAKE_PREFIX_PATH="$tmp/root/usr" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer"
[ -x "$tmp/consumer/client_consumer" ] || fail "the package's CMake config gives no tickwheel::client"
"$tmp/consumer/client_consumer"
echo "package checks passed"
