#!/usr/bin/env bash
# Installs what is missing, builds TrainLab and opens it with the quick-demo preset loaded, ready to Start.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target trainlab trainlab-cli
# Without a display the program says so and names the trainlab-cli command to use instead.
exec ./build/app/trainlab --preset quick-demo "$@"
