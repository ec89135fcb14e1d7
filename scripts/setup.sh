#!/usr/bin/env bash
# Installs the Debian 12 packages tilesmith needs (when missing) and builds it into
# build/ (or $TILESMITH_BUILD_DIR). OpenMPI is optional for the build (runs over several
# hosts, docs/scale-out.md) but installed here, so the tests run the several-rank path. The CUDA toolkit is not a Debian package: where
# nvcc/NVRTC are present the cuda backend is built, elsewhere it reports itself
# unavailable. python3-torch (CPU) is for the Python package's tests (docs/pytorch.md).
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(build-essential cmake ninja-build pkg-config libcurl4-openssl-dev nlohmann-json3-dev libspdlog-dev
          libcli11-dev libgtest-dev libgmock-dev libamdhip64-dev librocm-smi-dev libopenblas-dev zlib1g-dev libcpp-httplib-dev
          libjs-chart.js openmpi-bin libopenmpi-dev libeigen3-dev liblbfgspp-dev python3 python3-numpy python3-torch
          ${TILESMITH_EXTRA_PACKAGES:-})
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# CMake finds the CUDA toolkit through nvcc; the machine image puts it in /usr/local/cuda.
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH=/usr/local/cuda/bin:$PATH; fi
build=${TILESMITH_BUILD_DIR:-build}
# TILESMITH_WERROR=ON (scripts/test.sh, so CI) makes warnings in project code errors; unset,
# the build folder keeps whatever it was configured with.
werror=()
[[ -z ${TILESMITH_WERROR:-} ]] || werror=(-DTILESMITH_WERROR="$TILESMITH_WERROR")
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-Release} "${werror[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"
