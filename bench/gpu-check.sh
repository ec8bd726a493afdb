#!/usr/bin/env bash
# GPU check for a machine with an NVIDIA GPU and PyTorch but no Qt and no package installs.
# Builds core + trainlab-cli against PyTorch's LibTorch, lists devices, and times the seed's
# 1-GPU experiment (2 epochs, fp32 and bf16) on a synthetic full-size dataset; 2 GPUs when present.
# Fill .gpu-deps/ first on a Debian machine with scripts/fill-gpu-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/trainlab-gpu}
mkdir -p "$out"
prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
nccl=$(python3 -c 'import nvidia.nccl,os;print(os.path.join(list(nvidia.nccl.__path__)[0],"include"))' 2>/dev/null || true)
gen=""; command -v ninja >/dev/null && gen="-G Ninja"
cmake -S . -B build-gpu $gen -DCMAKE_BUILD_TYPE=Release -DTRAINLAB_GUI=OFF -DTRAINLAB_TESTS=OFF \
  -DCMAKE_PREFIX_PATH="$prefix" ${nccl:+-DTRAINLAB_NCCL_INCLUDE_DIR="$nccl"} 2>&1 | tail -3
cmake --build build-gpu -j "$(nproc)" --target trainlab-cli 2>&1 | tail -5
cli=./build-gpu/app/trainlab-cli
$cli --version
$cli devices
data="$out/synthetic"
python3 - "$data" <<'PY'
import gzip, os, random, struct, sys
d = sys.argv[1]; os.makedirs(d, exist_ok=True)
rng = random.Random(0)
for name, n in (("train", 60000), ("t10k", 10000)):
    with open(os.path.join(d, f"{name}-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, 28, 28)); f.write(os.urandom(n * 784))
    with open(os.path.join(d, f"{name}-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 2049, n)); f.write(bytes(rng.randrange(10) for _ in range(n)))
PY
for precision in fp32 bf16; do
  sed -e "s|\"path\": \"fashion-mnist\"|\"path\": \"$data\"|" -e "s|\"fp32\"|\"$precision\"|" resources/presets/d2l-1gpu.json > "$out/1gpu-$precision.json"
  echo "== d2l-1gpu $precision"
  $cli run "$out/1gpu-$precision.json" --epochs 2 --runs-dir "$out/runs" | grep -E "epoch|test acc:|failed"
done
if [ "$($cli devices | grep -c '^cuda:')" -ge 2 ]; then
  sed -e "s|\"path\": \"fashion-mnist\"|\"path\": \"$data\"|" resources/presets/d2l-2gpu.json > "$out/2gpu.json"
  echo "== d2l-2gpu fp32"
  $cli run "$out/2gpu.json" --epochs 2 --runs-dir "$out/runs" | grep -E "epoch|test acc:|failed"
fi
