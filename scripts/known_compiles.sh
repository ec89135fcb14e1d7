#!/usr/bin/env bash
# Rewrites tests/known_compiles.txt: the input hashes of the candidates that the compile sweeps of
# tests/runtime/compile_test.cpp (Compile.SampledValidConfigs..., OddLeadingDimensions...,
# HalfPrecisionTemplates...) saw compile with this machine's NVRTC and hipRTC. Those tests then
# render every candidate and compile only the ones whose inputs are not listed
# (tests/runtime/known_compiles.h). Run it after a change to kernels/ or the compilers and commit
# the file; a stale file costs CI time, never a wrong verdict.
#
#   scripts/known_compiles.sh          (build folder: $TILESMITH_BUILD_DIR, default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TILESMITH_BUILD_DIR:-build}
cmake --build "$build" --target compile_test
# One test at a time: each rewrites its own lines of the one file.
for t in SampledValidConfigsCompileOnBothCompilers OddLeadingDimensionsCompileOnBothCompilers \
         HalfPrecisionTemplatesCompileForEveryTypeTheyClaim; do
  TILESMITH_WRITE_KNOWN_COMPILES=1 "$build/tests/runtime/compile_test" --gtest_brief=1 --gtest_filter="Compile.$t"
done
echo "$(grep -vc '^#' tests/known_compiles.txt) input hashes in tests/known_compiles.txt"
