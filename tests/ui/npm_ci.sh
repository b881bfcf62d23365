#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# npm_ci.sh SOURCE_DIR DEST_DIR: installs the browser tests' npm packages
# (package-lock.json: playwright-core, pinned) into DEST_DIR/node_modules
# with `npm ci`, unless the same lock file is installed there already. No
# browser is downloaded: the tests use Debian's chromium.
set -euo pipefail
src=$1
dest=$2
mkdir -p "$dest"
if [ -d "$dest/node_modules/playwright-core" ] && cmp -s "$src/package-lock.json" "$dest/package-lock.json"; then
  exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dest/"
cd "$dest"
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
