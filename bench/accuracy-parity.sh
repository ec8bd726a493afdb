#!/usr/bin/env bash
# TrainLab against the chapter's PyTorch program (bench/reference.py) on the same real data, the same
# class-balanced subset, the same recipe and 3 seeds each; prints both test-acc curves (mean, min-max per
# epoch) and whether TrainLab's mean final test acc clears the bar (>= the reference's min, or its mean - 0.02).
#   bash bench/accuracy-parity.sh DATA_DIR      (a folder with the four IDX files; bench/make-full-data.py makes one)
# Knobs (environment): TRAIN=8192 TEST=2048 EPOCHS=3 BATCH=256 LR=0.1 SEEDS="0 1 2" THREADS=$(nproc) BUILD=build
#   PROGRAMS="trainlab reference" (run only one; the table reads what OUT_DIR holds)  OUT_DIR=a fresh temporary folder
#   SAME_START=1: also run the reference from TrainLab's initial weights and data order for the first seed, and
#   compare the two runs epoch by epoch (they should agree to rounding: the same program in two languages)
set -uo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: bench/accuracy-parity.sh DATA_DIR}
data=$(cd "$data" && pwd)
TRAIN=${TRAIN:-8192} TEST=${TEST:-2048} EPOCHS=${EPOCHS:-3} BATCH=${BATCH:-256} LR=${LR:-0.1}
SEEDS=${SEEDS:-0 1 2} THREADS=${THREADS:-$(nproc)} BUILD=${BUILD:-build} PROGRAMS=${PROGRAMS:-trainlab reference}
SAME_START=${SAME_START:-1}
cli=$BUILD/app/trainlab-cli
[ -x "$cli" ] || { echo "no $cli: build first (bash scripts/test.sh or cmake --build $BUILD)"; exit 2; }
python=${PYTHON:-python3}
"$python" -c 'import torch' 2>/dev/null || python=/usr/bin/python3
"$python" -c 'import torch' 2>/dev/null || { echo "no python3 with torch (Debian: apt-get install python3-torch)"; exit 2; }
out=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out"
echo "data $data: $TRAIN train / $TEST test, $EPOCHS epochs, batch $BATCH, lr $LR, seeds $SEEDS, $THREADS threads; results in $out"
for seed in $SEEDS; do
  cat > "$out/config-$seed.json" <<JSON
{"schema_version": 1, "name": "parity-seed$seed",
 "dataset": {"name": "fashion-mnist", "path": "$data", "train_limit": $TRAIN, "test_limit": $TEST},
 "model": {"arch": "resnet18", "in_channels": 1, "num_classes": 10}, "devices": ["cpu"],
 "batch_size": $BATCH, "learning_rate": $LR, "epochs": $EPOCHS, "momentum": 0.0, "weight_decay": 0.0,
 "seed": $seed, "precision": "fp32", "cpu_threads": $THREADS}
JSON
  if [[ " $PROGRAMS " == *" trainlab "* ]]; then
    echo "== TrainLab, seed $seed"
    rm -rf "$out/runs-$seed"
    "$cli" run "$out/config-$seed.json" --runs-dir "$out/runs-$seed" | grep -E '^(epoch|test acc)' || echo "TrainLab seed $seed failed"
  fi
  if [[ " $PROGRAMS " == *" reference "* ]]; then
    echo "== reference, seed $seed"
    "$python" -W ignore bench/reference.py --data "$data" --train "$TRAIN" --test "$TEST" --epochs "$EPOCHS" \
      --batch "$BATCH" --lr "$LR" --threads "$THREADS" --seed "$seed" --json "$out/reference-$seed.json" \
      || echo "reference seed $seed failed"
  fi
done
first=${SEEDS%% *}
if [ "$SAME_START" = 1 ] && [[ " $PROGRAMS " == *" reference "* ]]; then
  echo "== reference from TrainLab's start, seed $first"
  "$python" -W ignore bench/reference.py --data "$data" --train "$TRAIN" --test "$TEST" --epochs "$EPOCHS" \
    --batch "$BATCH" --lr "$LR" --threads "$THREADS" --seed "$first" --same-start-as-trainlab \
    --json "$out/same-$first.json" || echo "same-start reference failed"
fi
"$python" - "$out" $SEEDS <<'PY'
import csv, glob, json, statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
def trainlab(seed):
    rows = glob.glob(f"{out}/runs-{seed}/*/metrics.csv")
    return [float(r["test_acc"]) for r in csv.DictReader(open(rows[0]))] if rows else []
def reference(seed):
    try:
        return [e["test_acc"] for e in json.load(open(f"{out}/reference-{seed}.json"))["epochs"]]
    except OSError:
        return []
curves = {"TrainLab": [trainlab(s) for s in seeds], "reference": [reference(s) for s in seeds]}
epochs = max(len(c) for cs in curves.values() for c in cs)
print("\n| program | " + " | ".join(f"epoch {e + 1}: mean (min-max)" for e in range(epochs)) + " | final, per seed |")
print("|---|" + "---|" * (epochs + 1))
for name, cs in curves.items():
    cells = []
    for e in range(epochs):
        v = [c[e] for c in cs if len(c) > e]
        cells.append(f"{statistics.mean(v):.3f} ({min(v):.3f}-{max(v):.3f})" if v else "-")
    print(f"| {name} | " + " | ".join(cells) + " | " + ", ".join(f"{c[-1]:.3f}" if c else "failed" for c in cs) + " |")
try:
    same = json.load(open(f"{out}/same-{seeds[0]}.json"))["epochs"]
    rows = glob.glob(f"{out}/runs-{seeds[0]}/*/metrics.csv")
    mine = list(csv.DictReader(open(rows[0]))) if rows else []
    print(f"\nsame start (seed {seeds[0]}): TrainLab vs the reference from TrainLab's initial weights and data order")
    for m, r in zip(mine, same):
        print(f"  epoch {m['epoch']}: train loss {float(m['train_loss']):.4f} vs {r['train_loss']:.4f}, "
              f"test acc {float(m['test_acc']):.4f} vs {r['test_acc']:.4f}")
except OSError:
    pass
finals = {n: [c[-1] for c in cs if len(c) == epochs] for n, cs in curves.items()}
if len(finals["TrainLab"]) != len(seeds) or len(finals["reference"]) != len(seeds):
    print("parity: INCOMPLETE (a run failed)"); sys.exit(1)
mine, ref = statistics.mean(finals["TrainLab"]), finals["reference"]
ok = mine >= min(ref) or mine >= statistics.mean(ref) - 0.02
print(f"parity: {'PASS' if ok else 'FAIL'}: TrainLab mean final test acc {mine:.3f}, reference {statistics.mean(ref):.3f} "
      f"(min {min(ref):.3f}, max {max(ref):.3f})")
sys.exit(0 if ok else 1)
PY
