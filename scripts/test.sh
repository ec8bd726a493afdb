#!/usr/bin/env bash
# Installs what is missing, builds TrainLab and runs the whole Qt Test suite through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build build -j "$(nproc)"
cd build
# One at a time: two at once measured slower (2026-12-05: 515 s against 497 s), the light tests' processes
# stealing cores from the training ones, whose two threads then wait on each other.
ctest --output-on-failure -j1
