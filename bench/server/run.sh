#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-server: starts a throw-away PostgreSQL 15 (initdb into a temp
# directory, free port, stopped at the end), runs build/bench/server/
# server_bench against tickwheel serve and PostgreSQL, saves the JSON in
# bench/server/results/ and rewrites the server-bench region of
# docs/performance.md. QUICK=1: smaller counts (1M backlog only).
# CLUSTER_ONLY=1: only the peer and the cluster phases, saved in
# cluster_bench.json; only the cluster-bench region is rewritten.
# ONLY=creates: just the create phases (create_phases.h), into
# bench/server/results/creates.json and the create-bench region.
# ONLY=schedules: just the schedule phases (schedule_phases.h: 1,000,000
# schedules every minute, QUICK=1 20,000, SCHEDULES=N any other size,
# CLUSTER_SCHEDULES=N another size for the 3-node cluster), into
# bench/server/results/schedules.json and the schedule-server-bench region.
# ONLY=flows: just the flow phases (flow_phases.h), into
# bench/server/results/flows.json and the flow-bench region.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
bench=$BUILD/bench/server/server_bench
[ -x "$bench" ] || { echo "build $bench first (make bench-server does)"; exit 1; }

pgbin=/usr/lib/postgresql/15/bin
tmp=$(mktemp -d /tmp/tickwheel-pg-XXXXXX)
chmod 755 "$tmp"
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
  chown postgres "$tmp"
  as_pg=(runuser -u postgres --)
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$tmp/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
"${as_pg[@]}" "$pgbin/initdb" -D "$tmp/data" -U postgres -A trust >/dev/null
# Durable like tickwheel (fsync, synchronous_commit on: the defaults), with
# memory for the table and room for 64 + 32 connections.
"${as_pg[@]}" "$pgbin/pg_ctl" -D "$tmp/data" -l "$tmp/pg.log" -w start \
  -o "-p $port -k $tmp -c listen_addresses='' -c max_connections=200 -c shared_buffers=256MB" >/dev/null
conninfo="host=$tmp port=$port user=postgres dbname=postgres"

args=()
[ -n "${QUICK:-}" ] && args+=(--quick)
out=bench/server/results/server_bench.json
if [ -n "${CLUSTER_ONLY:-}" ]; then
  args+=(--only-cluster)
  out=bench/server/results/cluster_bench.json
fi
mkdir -p bench/server/results
if [ "${ONLY:-}" = creates ]; then
  "$bench" --binary "$BUILD/tickwheel" --pg "$conninfo" "${args[@]}" --only-creates \
    > bench/server/results/creates.json
  /usr/bin/python3 bench/server/create_report.py bench/server/results/creates.json docs/performance.md
  exit 0
fi
[ -n "${SCHEDULES:-}" ] && args+=(--schedules "$SCHEDULES")
[ -n "${CLUSTER_SCHEDULES:-}" ] && args+=(--cluster-schedules "$CLUSTER_SCHEDULES")
if [ "${ONLY:-}" = schedules ]; then
  "$bench" --binary "$BUILD/tickwheel" --pg "$conninfo" "${args[@]}" --only-schedules \
    > bench/server/results/schedules.json.tmp
  mv bench/server/results/schedules.json.tmp bench/server/results/schedules.json
  /usr/bin/python3 bench/server/schedule_report.py bench/server/results/schedules.json docs/performance.md
  exit 0
fi
if [ "${ONLY:-}" = flows ]; then
  "$bench" --binary "$BUILD/tickwheel" --pg "$conninfo" "${args[@]}" --only-flows \
    > bench/server/results/flows.json.tmp
  mv bench/server/results/flows.json.tmp bench/server/results/flows.json
  /usr/bin/python3 bench/server/flow_report.py bench/server/results/flows.json docs/performance.md
  exit 0
fi
"$bench" --binary "$BUILD/tickwheel" --pg "$conninfo" "${args[@]}" > "$out.tmp"
mv "$out.tmp" "$out"
/usr/bin/python3 bench/server/report.py "$out" docs/performance.md
if [ -z "${CLUSTER_ONLY:-}" ]; then
  /usr/bin/python3 bench/server/flow_report.py "$out" docs/performance.md
fi
