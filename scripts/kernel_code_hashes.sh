#!/usr/bin/env bash
# Rewrites tests/kernel_code_hashes.txt: the code hash of every case of
# scripts/kernel_codegen_cases.txt as this build's autotune-loop compiles it (NVRTC for sm_*,
# hipRTC for gfx*), which tests/cli/kernel_code_hashes_test.cpp checks. Run it with a change to
# kernels/ that is meant to change generated code, look at which templates' lines moved (git
# diff), and commit the file with the change. scripts/kernel_codegen_check.sh shows the PTX diff.
#
#   scripts/kernel_code_hashes.sh          (build folder: $TILESMITH_BUILD_DIR, default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TILESMITH_BUILD_DIR:-build}
cmake --build "$build" --target cli_kernel_code_hashes_test autotune-loop
TILESMITH_WRITE_CODE_HASHES=1 "$build/tests/cli/cli_kernel_code_hashes_test" --gtest_brief=1
if git diff --quiet -- tests/kernel_code_hashes.txt 2>/dev/null; then
  echo "no generated code changed"
else
  # A case whose line left with one hash and came back with another changed; one only added is new.
  git diff -U0 -- tests/kernel_code_hashes.txt | awk '
    /^-[0-9a-f]/ { sub(/^-[^|]*\| */, ""); old[$0] = 1 }
    /^\+[0-9a-f]/ { line = $0; sub(/^\+[^|]*\| */, "", line); split(line, f, " *\\| *"); plus[line] = f[1] }
    END { for (l in plus) n[(l in old ? "changed" : "new") " " plus[l]]++
          for (k in n) print "  " n[k] " case(s) " k }' | sort
fi
