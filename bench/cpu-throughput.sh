#!/usr/bin/env bash
# Prints measured sec/epoch and img/s of the built CLI on the built-in sample: 1 vs 2 CPU replicas, fp32 vs bf16.
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${CLI:-./build/app/trainlab-cli}
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
for devices in cpu cpu,cpu; do
  for precision in fp32 bf16; do
    cfg="$runs/$precision.json"
    sed -e "s/\"fp32\"/\"$precision\"/" resources/presets/quick-demo.json > "$cfg"
    line=$($cli run "$cfg" --epochs 1 --train-limit 640 --test-limit 100 --devices "$devices" --runs-dir "$runs" | grep '^epoch 1/1')
    echo "devices=$devices precision=$precision  ${line#*test acc * }"
  done
done
