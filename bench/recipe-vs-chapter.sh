#!/usr/bin/env bash
# The fmnist-fast preset's recipe against the chapter's (d2l-cpu: batch 256, lr 0.1, no momentum, constant rate)
# on the same real data, the same class-balanced subset and the same seeds, both on the CPU; prints each recipe's
# test-acc curve (mean and min-max per epoch over the seeds) and the gain of the new recipe's final mean.
#   bash bench/recipe-vs-chapter.sh DATA_DIR   (a folder with the four IDX files; bench/make-full-data.py makes one)
# Knobs (environment): TRAIN=8192 TEST=2048 EPOCHS=5 SEEDS="0 1 2" THREADS=$(nproc) BUILD=build OUT_DIR=(temporary)
#   PRECISION=bf16|fp32 runs both recipes at that precision (default: each its own, the chapter's fp32 is ~1.8x slower)
set -uo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: bench/recipe-vs-chapter.sh DATA_DIR}
data=$(cd "$data" && pwd)
TRAIN=${TRAIN:-8192} TEST=${TEST:-2048} EPOCHS=${EPOCHS:-5} SEEDS=${SEEDS:-0 1 2} THREADS=${THREADS:-$(nproc)}
BUILD=${BUILD:-build} PRECISION=${PRECISION:-}
cli=$BUILD/app/trainlab-cli
[ -x "$cli" ] || { echo "no $cli: build first (bash scripts/test.sh or cmake --build $BUILD)"; exit 2; }
out=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out"
echo "data $data: $TRAIN train / $TEST test, $EPOCHS epochs, seeds $SEEDS, $THREADS threads, precision ${PRECISION:-as each recipe}; results in $out"
for recipe in d2l-cpu fmnist-fast; do
  for seed in $SEEDS; do
    python3 - "resources/presets/$recipe.json" "$out/$recipe-$seed.json" "$data" "$TRAIN" "$TEST" "$EPOCHS" "$seed" \
      "$THREADS" "$PRECISION" <<'PY'
import json, sys
src, dst, data, train, test, epochs, seed, threads, precision = sys.argv[1:]
c = json.load(open(src))
c.update(name=f"{c['name']}-seed{seed}", devices=["cpu"], epochs=int(epochs), seed=int(seed), cpu_threads=int(threads))
c["dataset"].update(path=data, train_limit=int(train), test_limit=int(test))
if precision:
    c["precision"] = precision
json.dump(c, open(dst, "w"), indent=1)
PY
    echo "== $recipe, seed $seed"
    rm -rf "$out/runs-$recipe-$seed"
    "$cli" run "$out/$recipe-$seed.json" --runs-dir "$out/runs-$recipe-$seed" | grep -E '^(augmentation|epoch [0-9]|test acc)' \
      || echo "$recipe seed $seed failed"
  done
done
python3 - "$out" $SEEDS <<'PY'
import csv, glob, statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
def curve(recipe, seed):
    rows = glob.glob(f"{out}/runs-{recipe}-{seed}/*/metrics.csv")
    return [float(r["test_acc"]) for r in csv.DictReader(open(rows[0]))] if rows else []
final = {}
for recipe in ("d2l-cpu", "fmnist-fast"):
    curves = [c for c in (curve(recipe, s) for s in seeds) if c]
    if not curves:
        print(f"{recipe}: no run finished"); continue
    n = min(len(c) for c in curves)
    print(f"{recipe} ({len(curves)} seeds): test acc per epoch, mean [min, max]")
    for e in range(n):
        v = [c[e] for c in curves]
        print(f"  epoch {e + 1}: {statistics.mean(v):.3f} [{min(v):.3f}, {max(v):.3f}]")
    final[recipe] = statistics.mean(c[n - 1] for c in curves)
if len(final) == 2:
    gain = final["fmnist-fast"] - final["d2l-cpu"]
    print(f"final mean test acc: chapter {final['d2l-cpu']:.3f}, fmnist-fast {final['fmnist-fast']:.3f}, gain {gain:+.3f} "
          f"({'meets' if gain >= 0.05 else 'misses'} the +0.05 bar)")
PY
