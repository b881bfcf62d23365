#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one fuzz target: first every seed (corpus/<name>/) and every kept
# input (regressions/<name>/) once, then fuzzing for FUZZ_SECONDS (default
# 25) from those and from the inputs earlier runs found
# (<build>/fuzz-corpus/<name>/, where new ones go). Exits non-zero, naming
# the input, if anything crashes, leaks, hangs (-timeout) or breaks an
# oracle; the input is saved under <build>/crashes/.
#
#   run.sh BINARY NAME TESTS_FUZZ_DIR BUILD_DIR [libFuzzer flags...]
set -uo pipefail
bin=$1 name=$2 src=$3 build=$4
shift 4
seconds=${FUZZ_SECONDS:-25}

work="$build/fuzz-corpus/$name"
crashes="$build/crashes"
logs="$build/fuzz-logs"
mkdir -p "$work" "$crashes" "$logs"
log="$logs/$name.log"
inputs=()
for d in "$src/corpus/$name" "$src/regressions/$name"; do
  [ -d "$d" ] && inputs+=("$d")
done

fail() {
  echo "FUZZ FAILURE in $name: $1"
  echo "--- last lines of $log:"
  tail -n 40 "$log"
  echo "---"
  local found
  found=$(find "$crashes" -name "$name-*" -newer "$stamp" -type f 2>/dev/null)
  if [ -n "$found" ]; then
    echo "Input(s) that fail, saved:"
    for f in $found; do echo "  $f"; done
    echo "Reproduce: $bin <input>"
    echo "Once fixed, keep the input as a regression: tests/fuzz/regressions/$name/"
  fi
  exit 1
}

stamp=$(mktemp)
trap 'rm -f "$stamp"' EXIT

# 1. Replay the seeds and kept regressions, one run each.
files=()
for d in "${inputs[@]}"; do
  while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$d" -type f -print0)
done
if [ ${#files[@]} -gt 0 ]; then
  if ! "$bin" "$@" -artifact_prefix="$crashes/$name-" "${files[@]}" >"$log" 2>&1; then
    fail "a seed or regression input fails"
  fi
  echo "$name: ${#files[@]} seed and regression inputs pass"
fi

# 2. Fuzz.
if ! "$bin" "$@" -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix="$crashes/$name-" "$work" "${inputs[@]}" >>"$log" 2>&1; then
  fail "found an input that fails after fuzzing"
fi
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
summary="$name: ${seconds}s, ${runs:-?} runs, ${rate:-?} exec/s, $cov, corpus $(ls "$work" | wc -l) files"
echo "$summary"
echo "$summary" >> "$logs/summary.txt"
