#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-transfer [TIMERS=N] [STORES=embedded,cluster]: the rates of
# tickwheel import and export (docs/data.md) and the time and size of a
# backup, for N pending timers (default 1,000,000), on the embedded store
# (a hot backup: tickwheel backup) and on a 1-node cluster (a throw-away
# PostgreSQL 15, as bench/server/run.sh starts it; pg_dump -Fc, as
# docs/data.md says to back a cluster up). STORES picks either or both.
# The timers are generated as an export file (pending, an hour ahead, a
# 40-byte payload), imported with the CLI (--batch 1000: one durable
# write per request), exported back, and backed up (embedded). Every
# server runs with --pause-delivery: nothing fires during the run. Writes
# bench/server/results/transfer.md (a table for docs/performance.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
TIMERS=${TIMERS:-1000000}
STORES=${STORES:-embedded,cluster}
case ",$STORES," in
  *,embedded,*|*,cluster,*) ;;
  *) echo "STORES must list embedded and/or cluster (comma-separated), not '$STORES'"; exit 1 ;;
esac
wants() { [[ ",$STORES," == *",$1,"* ]]; }
bin=$BUILD/tickwheel
[ -x "$bin" ] || { echo "build $bin first (make bench-transfer does)"; exit 1; }

pgbin=/usr/lib/postgresql/15/bin
tmp=$(mktemp -d /tmp/tickwheel-transfer-XXXXXX)
chmod 755 "$tmp"
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
  mkdir "$tmp/pg" && chown postgres "$tmp/pg"
  as_pg=(runuser -u postgres --)
else
  mkdir "$tmp/pg"
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
servers=()
cleanup() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$tmp/pg/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
pgport=$(free_port)
if wants cluster; then
  "${as_pg[@]}" "$pgbin/initdb" -D "$tmp/pg/data" -U postgres -A trust >/dev/null
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$tmp/pg/data" -l "$tmp/pg/pg.log" -w start \
    -o "-p $pgport -k $tmp/pg -c listen_addresses='' -c max_connections=200 -c shared_buffers=256MB" >/dev/null
  conninfo="host=$tmp/pg port=$pgport user=postgres dbname=postgres"
fi

# The input: an export of TIMERS pending timers.
python3 - "$TIMERS" > "$tmp/in.jsonl" <<'EOF'
import sys, time
n = int(sys.argv[1])
fire = int(time.time() * 1000) + 3_600_000
out = sys.stdout
out.write('{"kind":"export","format":1,"timers":%d}\n' % n)
for i in range(n):
    out.write('{"kind":"timer","id":"bench-%08d","state":"pending","fire_at_ms":%d,'
              '"target":{"url":"http://127.0.0.1:9/hook"},"payload":{"order":%d,"note":"bench"}}\n'
              % (i, fire + i % 600_000, i))
out.write('{"kind":"end"}\n')
EOF

# Starts `tickwheel serve ARGS` on a free port; sets $addr.
start() {
  local port; port=$(free_port)
  "$bin" serve --listen "127.0.0.1:$port" --pause-delivery --max-batch 10000 "$@" \
    > "$tmp/serve-$port.log" 2>&1 &
  servers+=($!)
  addr="127.0.0.1:$port"
  for _ in $(seq 1 200); do
    curl -sf "http://$addr/healthz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "tickwheel serve did not start:"; cat "$tmp/serve-$port.log"; exit 1
}
# Runs a command; prints its wall seconds.
timed() {
  local t0 t1; t0=$(date +%s.%N)
  "$@" > /dev/null 2> "$tmp/last.err" || { cat "$tmp/last.err"; exit 1; }
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.1f}')"
}
rate() { python3 -c "print(f'{$TIMERS / $1:,.0f}')"; }

rows=()
if wants embedded; then
  start --data-dir "$tmp/embedded"
  imp=$(timed "$bin" import --server "$addr" --batch 1000 -f "$tmp/in.jsonl")
  exp=$(timed "$bin" export --server "$addr" -o "$tmp/out-embedded.jsonl")
  bk=$(timed "$bin" backup --server "$addr" --to "$tmp/backup")
  bksize=$(du -sm "$tmp/backup" | cut -f1)
  datasize=$(du -sm "$tmp/embedded" | cut -f1)
  rows+=("| embedded (RocksDB) | $(rate "$imp")/s ($imp s) | $(rate "$exp")/s ($exp s) | $bk s, $bksize MiB (data dir $datasize MiB; the backup's tables are hard links) |")
fi

if wants cluster; then
  start --postgres "$conninfo" --node-id bench0 --shards 16
  imp=$(timed "$bin" import --server "$addr" --batch 1000 -f "$tmp/in.jsonl")
  exp=$(timed "$bin" export --server "$addr" -o "$tmp/out-cluster.jsonl")
  dump=$(timed "$pgbin/pg_dump" -h "$tmp/pg" -p "$pgport" -U postgres -Fc -f "$tmp/cluster.dump" postgres)
  dumpsize=$(du -sm "$tmp/cluster.dump" | cut -f1)
  rows+=("| 1-node cluster (PostgreSQL 15) | $(rate "$imp")/s ($imp s) | $(rate "$exp")/s ($exp s) | pg_dump -Fc: $dump s, $dumpsize MiB |")
fi

mkdir -p bench/server/results
{
  echo "$(printf "%'d" "$TIMERS") pending timers, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg) at the end:"
  echo
  echo "| store | import | export | backup |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | tee bench/server/results/transfer.md
