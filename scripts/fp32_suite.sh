#!/usr/bin/env bash
# The fp32 benchmark suite (scripts/gemm_suite.sh fp32):
#   scripts/fp32_suite.sh [OUT_DIR] [EVALS_SCALE]
exec "$(dirname "$0")/gemm_suite.sh" fp32 "$@"
