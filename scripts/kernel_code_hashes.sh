#!/usr/bin/env bash
# Rewrites tests/kernel_code_hashes.txt: the code hash and the input hash of every case of
# scripts/kernel_codegen_cases.txt as this build's autotune-loop compiles it (NVRTC for sm_*,
# hipRTC for gfx*), which tests/cli/kernel_code_hashes_test.cpp checks (compiling only the cases
# whose inputs differ from the file's). Run it with a change to kernels/ that is meant to change
# generated code, look at which templates' lines moved (git diff), and commit the file with the
# change. scripts/kernel_codegen_check.sh shows the PTX diff.
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
  # Lines are "CODE_HASH INPUT_HASH | case". A case whose line left with one code hash and came back
  # with another changed; with the same code hash only its inputs moved (the test compiles it until
  # this file records them); one only added is new.
  git diff -U0 -- tests/kernel_code_hashes.txt | awk '
    /^-[0-9a-f]/ { code = substr($1, 2); sub(/^-[^|]*\| */, ""); old[$0] = code }
    /^\+[0-9a-f]/ { code = substr($1, 2); line = $0; sub(/^\+[^|]*\| */, "", line); split(line, f, " *\\| *")
                    plus[line] = f[1]; now[line] = code }
    END { for (l in plus) n[(!(l in old) ? "new" : old[l] == now[l] ? "with new inputs, same code:" : "changed") " " plus[l]]++
          for (k in n) print "  " n[k] " case(s) " k }' | sort
  echo "the compile sweeps' list of known compiles goes stale with kernels/ too: scripts/known_compiles.sh"
fi
