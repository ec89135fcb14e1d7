#!/usr/bin/env bash
# The bf16/fp16 benchmark suite (scripts/gemm_suite.sh half):
#   scripts/half_suite.sh [OUT_DIR] [EVALS_SCALE]
exec "$(dirname "$0")/gemm_suite.sh" half "$@"
