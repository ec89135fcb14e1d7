#!/usr/bin/env bash
# Sets up (packages + build, see setup.sh) and runs every test. Tests that need a GPU
# carry the ctest label `gpu` and skip with the reason where there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
# The report test opens a page in Debian's headless chromium.
# Warnings in project code fail the build here (and so in CI).
TILESMITH_WERROR=ON TILESMITH_EXTRA_PACKAGES="chromium ${TILESMITH_EXTRA_PACKAGES:-}" scripts/setup.sh
ctest --test-dir "${TILESMITH_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" --timeout 600 "$@"
