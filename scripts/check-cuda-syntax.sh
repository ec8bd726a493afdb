#!/usr/bin/env bash
# Parses core/ with the CUDA and NCCL code paths on (TRAINLAB_WITH_CUDA, TRAINLAB_WITH_NCCL) against
# Debian's LibTorch 1.13 headers and a CUDA toolkit's headers: no GPU and no CUDA LibTorch needed.
# It catches what a compiler sees without linking; the LibTorch 2.x branches are not seen here.
set -euo pipefail
cd "$(dirname "$0")/.."
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/cuda_runtime_api.h" ] || [ ! -f "$cuda/include/nccl.h" ]; then
  echo "check-cuda-syntax: SKIPPED: no CUDA toolkit with nccl.h in $cuda (set CUDA_HOME)"
  exit 0
fi
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
# Debian's headers lack this CMake-generated one, which the CUDA build of LibTorch ships.
mkdir -p "$stub/c10/cuda/impl" "$stub/trainlab"
printf '#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n' > "$stub/c10/cuda/impl/cuda_cmake_macros.h"
sed "s/@PROJECT_VERSION@/0.0.0/" core/version.h.in > "$stub/trainlab/version.h"
werror=""
[ -n "${CI:-}" ] && [ "${CI}" != false ] && werror="-Werror"
flags=(-std=c++17 -fsyntax-only -Wall -Wextra -Wpedantic $werror -D_GLIBCXX_USE_CXX11_ABI=1
       -DUSE_DISTRIBUTED -DUSE_C10D_GLOO -DUSE_C10D_NCCL -DTRAINLAB_WITH_CUDA=1 -DTRAINLAB_WITH_NCCL=1
       -DTRAINLAB_SOURCE_RESOURCES='"."' -DTRAINLAB_INSTALL_DATADIR='"."'
       -I. -isystem "$stub" -isystem /usr/include/torch/csrc/api/include -isystem "$cuda/include")
if ! printf '%s\n' core/*.cpp | xargs -P "$(nproc)" -I{} sh -c 'c++ "$@" {} || { echo "check-cuda-syntax: FAILED: {}" >&2; exit 255; }' _ "${flags[@]}"; then
  exit 1
fi
echo "check-cuda-syntax: core/*.cpp parse with CUDA and NCCL on ($(ls core/*.cpp | wc -l) files, $cuda)"
