#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs, from Debian 12's packages, whatever tickwheel needs to build, test
# and benchmark that is not already present. Idempotent: when everything is
# installed it only asks dpkg and exits, silently, in well under a second.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build g++ clang-14 libclang-rt-14-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # benchmark peers
  libevent-dev libuv1-dev libev-dev
  # server
  libboost1.81-dev libboost-json1.81-dev librocksdb-dev libpq-dev
  libnats-dev libcli11-dev libspdlog-dev libssl-dev ca-certificates libjemalloc-dev
  # real servers for integration tests
  postgresql-15 nats-server
  # examples and plots
  libsqlite3-dev python3-matplotlib
  # tools used by tests and benchmarks
  curl procps openssl
  # recurring schedules: time zones on the system tz database, and the cron
  # oracle their tests compare against
  libhowardhinnant-date-dev tzdata python3-croniter
  # the API description's contract test, the metrics check, packaging checks
  python3-jsonschema prometheus lintian systemd fakeroot
  # the Go client library (standard library only) and clock-skew tests
  golang-go faketime
  # the web console's browser tests (tests/ui): headless Chromium
  chromium
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
# node and npm run the browser tests (playwright-core from npm); any node
# with npm will do (Debian's, or one already on the machine).
if ! command -v npm >/dev/null 2>&1; then missing+=(nodejs npm); fi
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# A fresh machine's package lists may be empty: refresh them first.
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
