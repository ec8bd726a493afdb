#!/usr/bin/env bash
# TrainLab against the chapter's PyTorch program (bench/reference.py) on the same CPU, data, subset, batch
# and threads, in one run: each program's img/s and test acc, and TrainLab's speed as a ratio of the reference's.
#   bash bench/cpu-vs-reference.sh [DATA_DIR]   (default: the built-in sample, 2,000 / 500 real images)
# Knobs (environment): TRAIN=2000 TEST=500 EPOCHS=2 BATCH=128 LR=0.1 SEED=0 THREADS=$(nproc) BUILD=build
#   PRECISIONS="fp32 bf16" (each program is run in each precision)
#   LAYOUTS="auto" (TrainLab's speed.channels_last for each run; "auto off on" adds a row for each layout; the
#   ratio is taken from the first)
# The reference is timed the chapter's way (no host sync inside the epoch: bench/reference.py).
set -uo pipefail
cd "$(dirname "$0")/.."
data=${1:-resources/sample}
[ -d "$data" ] || { echo "cpu-vs-reference: no folder $data" >&2; exit 2; }
data=$(cd "$data" && pwd)
TRAIN=${TRAIN:-2000} TEST=${TEST:-500} EPOCHS=${EPOCHS:-2} BATCH=${BATCH:-128} LR=${LR:-0.1} SEED=${SEED:-0}
THREADS=${THREADS:-$(nproc)} BUILD=${BUILD:-build} PRECISIONS=${PRECISIONS:-fp32 bf16} LAYOUTS=${LAYOUTS:-auto}
cli=$BUILD/app/trainlab-cli
[ -x "$cli" ] || { echo "cpu-vs-reference: no $cli: build first (bash scripts/test.sh)" >&2; exit 2; }
python=${PYTHON:-python3}
"$python" -c 'import torch' 2>/dev/null || python=/usr/bin/python3
"$python" -c 'import torch' 2>/dev/null || { echo "cpu-vs-reference: no python3 with torch (Debian: apt-get install python3-torch)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "data $data: $TRAIN train / $TEST test, $EPOCHS epoch(s), batch $BATCH, lr $LR, seed $SEED, $THREADS threads"
echo "LibTorch: TrainLab $("$cli" --version | tr '\n' ' '), reference torch $("$python" -c 'import torch; print(torch.__version__)')"
printf '%-10s %-9s %-14s %10s %10s %9s\n' program precision channels_last "img/s" "sec/epoch" "test acc"
declare -A rate
for precision in $PRECISIONS; do
  first=1
  for layout in $LAYOUTS; do
  cat > "$out/config.json" <<JSON
{"schema_version": 1, "name": "cpu-vs-reference",
 "dataset": {"name": "fashion-mnist", "path": "$data", "train_limit": $TRAIN, "test_limit": $TEST},
 "model": {"arch": "resnet18", "in_channels": 1, "num_classes": 10}, "devices": ["cpu"],
 "batch_size": $BATCH, "learning_rate": $LR, "epochs": $EPOCHS, "momentum": 0.0, "weight_decay": 0.0,
 "seed": $SEED, "precision": "$precision", "cpu_threads": $THREADS, "checkpoints": "none",
 "speed": {"channels_last": "$layout"}}
JSON
  runs=$out/runs-$precision-$layout
  if "$cli" run "$out/config.json" --runs-dir "$runs" >"$out/trainlab-$precision-$layout.log" 2>&1; then
    metrics=$(ls "$runs"/*/metrics.csv)
    used=$(sed -n 's/.*speed: channels_last \([a-z]*\).*/\1/p' "$out/trainlab-$precision-$layout.log" | head -n 1)
    read -r r s a < <("$python" - "$metrics" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(sum(float(r["images_per_second"]) for r in rows) / len(rows),
      sum(float(r["epoch_seconds"]) for r in rows) / len(rows), rows[-1]["test_acc"])
PY
)
    [ "$first" = 1 ] && rate[trainlab-$precision]=$r
    printf '%-10s %-9s %-14s %10.1f %10.1f %9.3f\n' TrainLab "$precision" "$layout: ${used:-?}" "$r" "$s" "$a"
  else
    echo "TrainLab $precision channels_last $layout failed:"; tail -5 "$out/trainlab-$precision-$layout.log"
  fi
  first=0
  done
  if "$python" -W ignore bench/reference.py --data "$data" --train "$TRAIN" --test "$TEST" --epochs "$EPOCHS" \
       --batch "$BATCH" --lr "$LR" --threads "$THREADS" --seed "$SEED" --precision "$precision" \
       --json "$out/reference-$precision.json" >"$out/reference-$precision.log" 2>&1; then
    read -r r s a < <("$python" - "$out/reference-$precision.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["epochs"]
print(sum(r["images_per_second"] for r in rows) / len(rows), sum(r["epoch_seconds"] for r in rows) / len(rows),
      rows[-1]["test_acc"])
PY
)
    rate[reference-$precision]=$r
    printf '%-10s %-9s %-14s %10.1f %10.1f %9.3f\n' reference "$precision" "off" "$r" "$s" "$a"
  else
    echo "reference $precision failed:"; tail -5 "$out/reference-$precision.log"
  fi
done
ratio() { [ -n "${rate[$1]:-}" ] && [ -n "${rate[$2]:-}" ] && awk -v a="${rate[$1]}" -v b="${rate[$2]}" 'BEGIN { printf "%.2fx", a / b }' || echo "n/a"; }
for precision in $PRECISIONS; do
  echo "TrainLab / reference, $precision: $(ratio "trainlab-$precision" "reference-$precision")"
done
if [[ " $PRECISIONS " == *" bf16 "* && " $PRECISIONS " == *" fp32 "* ]]; then
  echo "TrainLab bf16 / TrainLab fp32: $(ratio trainlab-bf16 trainlab-fp32)"
fi
