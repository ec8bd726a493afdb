#!/usr/bin/env bash
# Trains a short quick-demo in the window under Xvfb and saves the window as docs/screenshot.png.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target trainlab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/quick-demo-short.json" <<'JSON'
{
  "schema_version": 1,
  "name": "quick-demo (short)",
  "dataset": {"name": "fashion-mnist", "path": "builtin:sample", "train_limit": 600, "test_limit": 200},
  "devices": ["cpu"],
  "batch_size": 32,
  "learning_rate": 0.05,
  "epochs": 6,
  "momentum": 0.9
}
JSON
mkdir -p docs
# Its own settings and runs folder, so the picture does not depend on (or change) the user's.
XDG_CONFIG_HOME="$work/config" xvfb-run -a -s "-screen 0 1440x900x24" \
  ./build/app/trainlab --runs-dir "$work/runs" --screenshot docs/screenshot.png "$work/quick-demo-short.json"
