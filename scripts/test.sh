#!/usr/bin/env bash
# Installs what is missing, builds TrainLab and runs the whole Qt Test suite through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build build -j "$(nproc)"
cd build
# Two at a time: the training tests share a RESOURCE_LOCK (tests/CMakeLists.txt), so only the light ones overlap.
ctest --output-on-failure -j2
