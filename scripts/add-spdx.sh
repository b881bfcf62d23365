#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Puts "SPDX-License-Identifier: Apache-2.0" on the first line of every
# source file in the repository (the second after a #! line), in the
# file's comment syntax; files that have it are left alone, so it can be
# rerun whenever files are added. With --check it changes nothing and
# lists the files without it (exit 1 if any): `make test` runs that
# (the spdx_headers test).
#
#   scripts/add-spdx.sh          # add where missing
#   scripts/add-spdx.sh --check  # only report
set -euo pipefail
cd "$(dirname "$0")/.."
check=false
[ "${1:-}" = "--check" ] && check=true
readonly id="SPDX-License-Identifier: Apache-2.0"

# The comment that holds the identifier, for a path; empty: not a source.
comment_for() {
  case "$1" in
    *.h | *.cc | *.cpp | *.hpp | *.c | *.js | *.mjs | *.ts | *.go | *.proto) echo "// $id" ;;
    *.py | *.sh | *.cmake | *.in | */CMakeLists.txt | CMakeLists.txt | Makefile | */Makefile \
      | *.bash | *.yml | *.yaml | *.toml | *.service.in | .ci/run)
      echo "# $id" ;;
    *.css) echo "/* $id */" ;;
    *.html | *.svg) echo "<!-- $id -->" ;;
    *) echo "" ;;
  esac
}

# Files that are data, generated, or read byte for byte: left out.
skipped() {
  case "$1" in
    .ci/* | tests/fuzz/corpus/* | tests/fuzz/regressions/* | */results/* | *.json | *.csv | *.md \
      | *.png | *.dict | *.txt.in | LICENSE | packaging/tickwheel.default | packaging/deb/* \
      | packaging/tickwheel.1 | docs/*) return 0 ;;
  esac
  return 1
}

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files --cached --others --exclude-standard)
else
  files=$(find . -type f -not -path './build*' -not -path './.git/*' | sed 's|^\./||')
fi

missing=0
while IFS= read -r f; do
  [ -f "$f" ] || continue
  skipped "$f" && continue
  comment=$(comment_for "$f")
  [ -n "$comment" ] || continue
  first=$(head -n 1 "$f")
  line=1
  if [ "${first:0:2}" = "#!" ]; then line=2; fi
  if sed -n "${line}p" "$f" | grep -qF "$id"; then continue; fi
  if $check; then
    echo "no SPDX line: $f"
    missing=$((missing + 1))
    continue
  fi
  tmp=$(mktemp)
  if [ $line = 2 ]; then
    { head -n 1 "$f"; echo "$comment"; tail -n +2 "$f"; } >"$tmp"
  else
    { echo "$comment"; cat "$f"; } >"$tmp"
  fi
  cat "$tmp" >"$f"  # keeps the file's mode
  rm -f "$tmp"
done <<<"$files"

if $check; then
  if [ $missing -gt 0 ]; then
    echo "$missing file(s) without the SPDX line: run scripts/add-spdx.sh" >&2
    exit 1
  fi
  echo "every source file has its SPDX line"
fi
