#!/usr/bin/env bash
# Trains a short quick-demo in the window under Xvfb and saves the window as docs/screenshot.png.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target trainlab trainlab-cli
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
# An earlier run at a higher learning rate, so the picture shows two runs compared.
sed -e 's/"quick-demo (short)"/"lr 0.2"/' -e 's/"learning_rate": 0.05/"learning_rate": 0.2/' \
  "$work/quick-demo-short.json" > "$work/lr-0.2.json"
TRAINLAB_RUNS_DIR="$work/runs" ./build/app/trainlab-cli run "$work/lr-0.2.json" >/dev/null
mkdir -p docs
# Its own settings and runs folder, so the picture does not depend on (or change) the user's.
XDG_CONFIG_HOME="$work/config" xvfb-run -a -s "-screen 0 1440x900x24" \
  ./build/app/trainlab --runs-dir "$work/runs" --screenshot docs/screenshot.png "$work/quick-demo-short.json"
