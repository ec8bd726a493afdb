#!/usr/bin/env bash
# TrainLab against the chapter's PyTorch program (bench/reference.py) on the same CPU, data, subset, batch
# and threads, in one run: each program's img/s and test acc, and TrainLab's speed as a ratio of the reference's.
#   bash bench/cpu-vs-reference.sh [DATA_DIR]   (default: the built-in sample, 2,000 / 500 real images)
# Knobs (environment): TRAIN=2000 TEST=500 EPOCHS=2 BATCH=128 LR=0.1 SEED=0 THREADS=$(nproc) BUILD=build
#   PRECISIONS="fp32 bf16" (each program is run in each precision)
#   LAYOUTS="auto" (TrainLab's speed.channels_last for each run; "auto off on" adds a row for each layout; the
#   ratio is taken from the first)
#   WINOGRAD="true" (TrainLab's speed.winograd; "true false" adds a row for each, inside each layout)
#   ROUNDS=3 (the whole comparison again, in turn: this machine's speed drifts by tens of percent between minutes, so
#   the ratios are taken within each round and their median is printed with the range)
#   FLOOR=1 (a "conv floor" row per precision: bench/conv-floor.py, the model's convolutions alone, forward and
#   backward, in the layout TrainLab's first run used, with LibTorch's kernels (not Winograd's); FLOOR=0 leaves it out)
# The reference is timed the chapter's way (no host sync inside the epoch: bench/reference.py).
set -uo pipefail
cd "$(dirname "$0")/.."
data=${1:-resources/sample}
[ -d "$data" ] || { echo "cpu-vs-reference: no folder $data" >&2; exit 2; }
data=$(cd "$data" && pwd)
TRAIN=${TRAIN:-2000} TEST=${TEST:-500} EPOCHS=${EPOCHS:-2} BATCH=${BATCH:-128} LR=${LR:-0.1} SEED=${SEED:-0}
THREADS=${THREADS:-$(nproc)} BUILD=${BUILD:-build} PRECISIONS=${PRECISIONS:-fp32 bf16} LAYOUTS=${LAYOUTS:-auto}
WINOGRAD=${WINOGRAD:-true}
FLOOR=${FLOOR:-1} ROUNDS=${ROUNDS:-3}
cli=$BUILD/app/trainlab-cli
[ -x "$cli" ] || { echo "cpu-vs-reference: no $cli: build first (bash scripts/test.sh)" >&2; exit 2; }
python=${PYTHON:-python3}
"$python" -c 'import torch' 2>/dev/null || python=/usr/bin/python3
"$python" -c 'import torch' 2>/dev/null || { echo "cpu-vs-reference: no python3 with torch (Debian: apt-get install python3-torch)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# FILE CMD...: runs CMD and writes its minor page faults (thousands) to FILE, "-" without /usr/bin/time (Debian: time).
# A step's fresh memory shows there: the reference's count, and its speed with it, varies from run to run.
run_counted() {
  local file=$1 rc
  shift
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f %R -o "$file.raw" "$@"
    rc=$?
    tail -n 1 "$file.raw" | awk '{ printf "%.0fk\n", $1 / 1000 }' > "$file"
    return $rc
  fi
  echo - > "$file"
  "$@"
}
echo "data $data: $TRAIN train / $TEST test, $EPOCHS epoch(s), batch $BATCH, lr $LR, seed $SEED, $THREADS threads"
echo "LibTorch: TrainLab $("$cli" --version | tr '\n' ' '), reference torch $("$python" -c 'import torch; print(torch.__version__)')"
printf '%-5s %-10s %-9s %-30s %-9s %10s %10s %9s %8s\n' round program precision channels_last convs "img/s" "sec/epoch" "test acc" faults
declare -A rate layout_used
for round in $(seq 1 "$ROUNDS"); do
for precision in $PRECISIONS; do
  first=1
  for layout in $LAYOUTS; do
  for winograd in $WINOGRAD; do
  cat > "$out/config.json" <<JSON
{"schema_version": 1, "name": "cpu-vs-reference",
 "dataset": {"name": "fashion-mnist", "path": "$data", "train_limit": $TRAIN, "test_limit": $TEST},
 "model": {"arch": "resnet18", "in_channels": 1, "num_classes": 10}, "devices": ["cpu"],
 "batch_size": $BATCH, "learning_rate": $LR, "epochs": $EPOCHS, "momentum": 0.0, "weight_decay": 0.0,
 "seed": $SEED, "precision": "$precision", "cpu_threads": $THREADS, "checkpoints": "none",
 "speed": {"channels_last": "$layout", "winograd": $winograd}}
JSON
  runs=$out/runs-$precision-$layout-$winograd-$round
  log=$out/trainlab-$precision-$layout-$winograd.log
  if run_counted "$out/faults" "$cli" run "$out/config.json" --runs-dir "$runs" >"$log" 2>&1; then
    metrics=$(ls "$runs"/*/metrics.csv)
    used=$(sed -n 's/.*speed: channels_last \([^;]*\);.*/\1/p' "$log" | head -n 1)
    convs=libtorch
    grep -q '^speed: .*; Winograd convolutions' "$log" && convs=winograd
    read -r r s a < <("$python" - "$metrics" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(sum(float(r["images_per_second"]) for r in rows) / len(rows),
      sum(float(r["epoch_seconds"]) for r in rows) / len(rows), rows[-1]["test_acc"])
PY
)
    if [ "$first" = 1 ]; then rate[trainlab-$precision-$round]=$r; layout_used[$precision]=${used:-off}; fi
    printf '%-5s %-10s %-9s %-30s %-9s %10.1f %10.1f %9.3f %8s\n' "$round" TrainLab "$precision" "$layout: ${used:-?}" "$convs" \
      "$r" "$s" "$a" "$(cat "$out/faults")"
  else
    echo "TrainLab $precision channels_last $layout winograd $winograd failed:"; tail -5 "$log"
  fi
  first=0
  done
  done
  if [ "$FLOOR" = 1 ]; then
    case ${layout_used[$precision]:-off} in
      on) cl=(--channels-last) ;;
      "on but "*) cl=(--channels-last --nchw-from "${layout_used[$precision]#on but }") ;;
      *) cl=() ;;
    esac
    if floor=$("$python" bench/conv-floor.py --batch "$BATCH" --threads "$THREADS" --precision "$precision" "${cl[@]}" 2>&1); then
      r=$(sed -n 's/.* \([0-9.]*\) img\/s$/\1/p' <<<"$floor")
      rate[floor-$precision-$round]=$r
      printf '%-5s %-10s %-9s %-30s %-9s %10.1f %10.1f %9s %8s\n' "$round" "conv floor" "$precision" "${layout_used[$precision]:-off}" libtorch "$r" \
        "$(awk -v r="$r" -v n="$TRAIN" 'BEGIN { print n / r }')" "-" "-"
    else
      echo "conv floor $precision failed: $floor"
    fi
  fi
  if run_counted "$out/faults" "$python" -W ignore bench/reference.py --data "$data" --train "$TRAIN" --test "$TEST" --epochs "$EPOCHS" \
       --batch "$BATCH" --lr "$LR" --threads "$THREADS" --seed "$SEED" --precision "$precision" \
       --json "$out/reference-$precision.json" >"$out/reference-$precision.log" 2>&1; then
    read -r r s a < <("$python" - "$out/reference-$precision.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["epochs"]
print(sum(r["images_per_second"] for r in rows) / len(rows), sum(r["epoch_seconds"] for r in rows) / len(rows),
      rows[-1]["test_acc"])
PY
)
    rate[reference-$precision-$round]=$r
    printf '%-5s %-10s %-9s %-30s %-9s %10.1f %10.1f %9.3f %8s\n' "$round" reference "$precision" "off" libtorch "$r" "$s" "$a" "$(cat "$out/faults")"
  else
    echo "reference $precision failed:"; tail -5 "$out/reference-$precision.log"
  fi
done
done
# "median [min, max]" of the per-round ratios a/b (rounds where either is missing are left out).
ratio() {
  local k list=()
  for k in $(seq 1 "$ROUNDS"); do
    [ -n "${rate[$1-$k]:-}" ] && [ -n "${rate[$2-$k]:-}" ] && list+=("$(awk -v a="${rate[$1-$k]}" -v b="${rate[$2-$k]}" 'BEGIN { print a / b }')")
  done
  [ ${#list[@]} -gt 0 ] || { echo "n/a"; return; }
  printf '%s\n' "${list[@]}" | sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.2fx [%.2f, %.2f] over %d round(s)", m, v[1], v[NR], NR }'
}
for precision in $PRECISIONS; do
  echo "TrainLab / reference, $precision: $(ratio "trainlab-$precision" "reference-$precision")"
  [ "$FLOOR" = 1 ] && echo "TrainLab / its convolutions alone, $precision: $(ratio "trainlab-$precision" "floor-$precision") (1.00x: the step costs what LibTorch's convolutions cost alone; Winograd's can beat it)"
done
if [[ " $PRECISIONS " == *" bf16 "* && " $PRECISIONS " == *" fp32 "* ]]; then
  echo "TrainLab bf16 / TrainLab fp32: $(ratio trainlab-bf16 trainlab-fp32)"
fi
