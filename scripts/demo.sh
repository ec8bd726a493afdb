#!/usr/bin/env bash
# Installs what is missing, builds TrainLab and trains the quick-demo preset on the built-in sample.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$(nproc)" --target trainlab-cli
exec ./build/app/trainlab-cli run --preset quick-demo "$@"
