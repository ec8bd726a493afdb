#!/usr/bin/env bash
# The GPU check, in one go: on a bare Linux machine with NVIDIA GPUs, the CUDA toolkit and Python with
# a CUDA torch wheel (or a LibTorch folder/zip in TORCH_DIR), no Qt, no network, no package installs.
# Builds core + trainlab-cli against that LibTorch (headers it lacks come from third_party/include),
# then times TrainLab and bench/reference.py on a synthetic 60,000/10,000 IDX set (and on the real
# Fashion-MNIST when it is there): 1 GPU fp32/bf16 at batch 256 and 1024, ["cuda:0","cpu"], 2..N GPUs.
# Every step runs whatever an earlier one did; each step's full output is a log under the output
# folder, and a table at the end lists every step with ok / FAILED / skipped and its figures.
# Without a GPU it builds, says "no GPU" and exits 0. Run with --help for the options.
# Exit status: 0 every step that ran passed, 1 a step failed, 2 bad arguments.
# shellcheck disable=SC2317  # the step functions are called through step/train

usage() {
  cat <<'EOF'
usage: bench/gpu-check.sh [options]

  --out DIR          logs, data, runs and summary (default $OUT, else /tmp/trainlab-gpu)
  --quick            a short smoke run: 1 epoch on 4,096/1,024 synthetic images, batch 256 only,
                     no real data; without a GPU, one tiny CPU run to check the run and summary path
  --ablation         only the speed ablation on one GPU, batch 256 (real data when found, else synthetic):
                     today's path (fp32, NCHW, SGD loop, eager, no warm-up), + step warm-up,
                     + channels_last, + bf16, + fused SGD,
                     + CUDA graphs, the chapter's program beside them, then the chapter's whole experiment
                     (10 epochs, every switch on) and the fmnist-fast preset (10 epochs): wall time
                     from launch to the last epoch, final test acc; last, where time is left, AdamW
                     (lr 1e-3) with its update fused and as LibTorch's loop
  --skip-build       use the trainlab-cli already in the build folder
  --cli PATH         use this trainlab-cli (implies --skip-build)
  --configure-only   stop after CMake's configure step (checks nvcc, LibTorch, the NCCL header)
  --torch-dir DIR    LibTorch to build against: an unzipped libtorch/ folder, a .zip of one, or a
                     folder with TorchConfig.cmake (default $TORCH_DIR, else $PYTHON's torch wheel,
                     else a system LibTorch)
  --build-dir DIR    build folder (default build-gpu)
  --cmake-arg ARG    one more argument for CMake's configure step (repeatable)
  --jobs N           parallel compile jobs (default: all cores)
  --epochs N         epochs per timed run (default 2; --quick: 1)
  --no-real          skip the real Fashion-MNIST even when it is downloaded
  --no-reference     skip bench/reference.py
  --timeout S        limit for each training run, seconds (default 420; --quick: 180)
  --time-limit S     the whole check ends within S seconds: each run's limit is cut to what is left,
                     and a run that would start with under 30 s left is skipped (for leased machines)
  -h, --help         this text

environment: PYTHON (default python3), CUDA_HOME (else nvcc on PATH, else /usr/local/cuda),
  NCCL_INCLUDE_DIR (else the wheel's nvidia/nccl/include), TORCH_DIR, OUT, TRAINLAB_DATA_DIR;
  GPU_CHECK_ABLATION_ON_CPU=1 with --ablation and no GPU: its rows on the CPU with 256 / 128 images (checks the script)
exit status: 0 every step that ran passed (also: no GPU), 1 a step failed, 2 bad arguments
EOF
}

die_usage() { echo "gpu-check: $*" >&2; echo "gpu-check: see bench/gpu-check.sh --help" >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/trainlab-gpu}
quick=0 ablation=0 skip_build=0 configure_only=0 use_real=1 use_reference=1
cli='' torch_dir=${TORCH_DIR:-} build_dir=build-gpu jobs=$(nproc 2>/dev/null || echo 4) epochs='' run_timeout='' time_limit=''
extra_cmake=()
need_value() { [ "$2" -ge 2 ] || die_usage "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --out) need_value "$1" $#; out=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --ablation) ablation=1; shift ;;
    --skip-build) skip_build=1; shift ;;
    --cli) need_value "$1" $#; cli=$2; skip_build=1; shift 2 ;;
    --configure-only) configure_only=1; shift ;;
    --torch-dir) need_value "$1" $#; torch_dir=$2; shift 2 ;;
    --build-dir) need_value "$1" $#; build_dir=$2; shift 2 ;;
    --cmake-arg) need_value "$1" $#; extra_cmake+=("$2"); shift 2 ;;
    --jobs) need_value "$1" $#; jobs=$2; shift 2 ;;
    --epochs) need_value "$1" $#; epochs=$2; shift 2 ;;
    --timeout) need_value "$1" $#; run_timeout=$2; shift 2 ;;
    --time-limit) need_value "$1" $#; time_limit=$2; shift 2 ;;
    --no-real) use_real=0; shift ;;
    --no-reference) use_reference=0; shift ;;
    --out=*|--cli=*|--torch-dir=*|--build-dir=*|--cmake-arg=*|--jobs=*|--epochs=*|--timeout=*|--time-limit=*)
      opt=${1%%=*}; val=${1#*=}; shift; set -- "$opt" "$val" "$@" ;;
    *) die_usage "unknown argument: $1" ;;
  esac
done
positive() { case $2 in ''|*[!0-9]*|0*) die_usage "$1 must be a positive whole number, got '$2'" ;; esac; }
positive --jobs "$jobs"
[ -z "$epochs" ] || positive --epochs "$epochs"
[ -z "$run_timeout" ] || positive --timeout "$run_timeout"
[ -z "$time_limit" ] || positive --time-limit "$time_limit"
[ "$skip_build" = 1 ] && [ "$configure_only" = 1 ] && die_usage "--configure-only and --skip-build/--cli exclude each other"
[ "$quick" = 1 ] && [ "$ablation" = 1 ] && die_usage "--quick and --ablation exclude each other"
if [ -n "$cli" ]; then
  if [ ! -f "$cli" ] || [ ! -x "$cli" ]; then die_usage "--cli $cli: not an executable file"; fi
  cli=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
fi
if [ -n "$torch_dir" ] && [ ! -e "$torch_dir" ]; then
  die_usage "--torch-dir / TORCH_DIR $torch_dir: no such file or folder"
fi
if [ "$quick" = 1 ]; then
  epochs=${epochs:-1}; run_timeout=${run_timeout:-180}; use_real=0
else
  epochs=${epochs:-2}; run_timeout=${run_timeout:-420}
fi
mkdir -p "$out/logs" || die_usage "--out $out: cannot create it"
out=$(cd "$out" && pwd)
logs=$out/logs
cd "$root" || exit 1
case $build_dir in /*) ;; *) build_dir=$root/$build_dir ;; esac
[ -n "$cli" ] || cli=$build_dir/app/trainlab-cli
python=${PYTHON:-python3}
started=$(date +%s)

# ---- the steps and their table -----------------------------------------------------------------
names=() results=() figures=() steplogs=()
record() { names+=("$1"); results+=("$2"); figures+=("$3"); steplogs+=("$4"); }
slug() { tr -c 'A-Za-z0-9.\n' '-' <<<"$1" | tr -s '-' | sed 's/^-//; s/-$//'; }
# step NAME COMMAND...: runs it with its whole output in logs/NAME.log; records ok or FAILED (exit status).
step() {
  local name=$1 log; shift
  log=$logs/$(printf '%02d' "${#names[@]}")-$(slug "$name").log
  echo "== $name"
  { echo "\$ $*"; "$@"; } >"$log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then
    record "$name" ok "" "$log"
  else
    record "$name" FAILED "exit $rc" "$log"
    echo "   FAILED (exit $rc), last lines of $log:"
    tail -n 8 "$log" | sed 's/^/   | /'
  fi
  return $rc
}
skip() { echo "== $1: skipped ($2)"; record "$1" skipped "$2" ""; }

print_summary() {
  local i w=4
  for i in "${!names[@]}"; do [ "${#names[i]}" -gt "$w" ] && w=${#names[i]}; done
  {
    echo
    echo "TrainLab GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), $(( $(date +%s) - started )) s, output in $out"
    [ -n "$machine" ] && echo "$machine"
    printf "%-${w}s  %-7s  %s\n" STEP RESULT "FIGURES (sec/epoch and img/s of the last epoch; GPU memory: nvidia-smi's peak memory.used)"
    for i in "${!names[@]}"; do
      printf "%-${w}s  %-7s  %s\n" "${names[i]}" "${results[i]}" "${figures[i]}"
    done
    for i in "${!names[@]}"; do
      [ "${results[i]}" = FAILED ] && echo "FAILED: ${names[i]}: see ${steplogs[i]}"
    done
  } | tee "$out/summary.txt"
}
finish() {
  print_summary
  local r
  for r in "${results[@]}"; do [ "$r" = FAILED ] && exit 1; done
  exit 0
}

# ---- the machine ----------------------------------------------------------------------------------
smi_gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  smi_gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
fi
cuda_home=${CUDA_HOME:-${CUDA_PATH:-}}
if [ -z "$cuda_home" ] && command -v nvcc >/dev/null 2>&1; then
  cuda_home=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
fi
[ -z "$cuda_home" ] && [ -x /usr/local/cuda/bin/nvcc ] && cuda_home=/usr/local/cuda
nvcc=
[ -n "$cuda_home" ] && [ -x "$cuda_home/bin/nvcc" ] && nvcc=$cuda_home/bin/nvcc

# Which LibTorch: --torch-dir / TORCH_DIR, else the Python wheel, else the system's.
torch_cmake_dir='' torch_prefix='' torch_from='' wheel_prefix='' wheel_nccl_include='' wheel_nccl_version='' torch_cuda=''
if [ -n "$torch_dir" ]; then
  torch_dir=$(cd "$(dirname "$torch_dir")" && pwd)/$(basename "$torch_dir")
  if [ -f "$torch_dir" ]; then
    case $torch_dir in *.zip) ;; *) die_usage "--torch-dir $torch_dir: a file that is not a .zip" ;; esac
    unzipped=$out/libtorch-$(basename "$torch_dir" .zip)
    if [ ! -f "$unzipped/.complete" ]; then
      echo "== unzip $(basename "$torch_dir")"
      rm -rf "$unzipped"
      if ! unzip -q "$torch_dir" -d "$unzipped" >"$logs/unzip.log" 2>&1 \
         && ! "$python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$torch_dir" "$unzipped" \
           >>"$logs/unzip.log" 2>&1; then
        echo "gpu-check: cannot unzip $torch_dir (see $logs/unzip.log)" >&2; exit 1
      fi
      touch "$unzipped/.complete"
    fi
    torch_dir=$(dirname "$(find "$unzipped" -name TorchConfig.cmake -path '*share/cmake/Torch/*' | head -n 1)")
    [ "$torch_dir" != . ] || { echo "gpu-check: $unzipped has no share/cmake/Torch/TorchConfig.cmake" >&2; exit 1; }
  fi
  for c in "$torch_dir" "$torch_dir/share/cmake/Torch" "$torch_dir/libtorch/share/cmake/Torch"; do
    [ -f "$c/TorchConfig.cmake" ] && { torch_cmake_dir=$(cd "$c" && pwd); break; }
  done
  [ -n "$torch_cmake_dir" ] || die_usage "--torch-dir $torch_dir: no TorchConfig.cmake there, in share/cmake/Torch or libtorch/share/cmake/Torch"
  torch_prefix=$(cd "$torch_cmake_dir/../../.." && pwd)
  torch_from="LibTorch in $torch_prefix"
elif info=$("$python" - 2>/dev/null <<'PY'
import os, torch
print(torch.__version__)
print(torch.utils.cmake_prefix_path)
print(os.path.dirname(torch.__file__))
print(torch.version.cuda or "")
import glob
site = os.path.dirname(os.path.dirname(torch.__file__))
# CUDA 12 wheels keep nvidia/nccl/include; CUDA 13 ones may share nvidia/cu13/include.
found = [d for d in [os.path.join(site, "nvidia", "nccl", "include")] + sorted(glob.glob(os.path.join(site, "nvidia", "cu*", "include")))
         if os.path.isfile(os.path.join(d, "nccl.h"))]
print(found[0] if found else "")
try:
    v = torch.cuda.nccl.version()
    print(".".join(map(str, v)) if isinstance(v, tuple) else "%d.%d.%d" % (v // 1000, v % 1000 // 100, v % 100))
except Exception:
    print("")
PY
); then
  { read -r torch_version; read -r wheel_prefix; read -r torch_prefix; read -r torch_cuda; read -r wheel_nccl_include; read -r wheel_nccl_version; } <<<"$info"
  torch_from="$python's torch $torch_version${torch_cuda:+ (CUDA $torch_cuda)} in $torch_prefix"
else
  torch_from="the system's LibTorch (no --torch-dir, TORCH_DIR or torch in $python)"
fi
nccl_include=${NCCL_INCLUDE_DIR:-$wheel_nccl_include}
expected_nccl=$wheel_nccl_version
if [ -z "$expected_nccl" ] && [ -n "$torch_prefix" ]; then
  # An official LibTorch zip links NCCL statically into libtorch_cuda.so; its version string is inside.
  for lib in "$torch_prefix"/lib/libnccl.so* "$torch_prefix"/lib/libtorch_cuda.so; do
    if [ ! -f "$lib" ] || [ -L "$lib" ]; then continue; fi
    expected_nccl=$(grep -a -o -m 1 -E 'NCCL version [0-9]+\.[0-9]+\.[0-9]+' "$lib" | head -n 1 | awk '{print $3}')
    [ -n "$expected_nccl" ] && break
  done
fi
machine="machine: $(nproc) cores, $smi_gpus GPU(s) in nvidia-smi, nvcc: ${nvcc:-none}; torch: $torch_from"

environment() {
  echo "$machine"
  uname -a
  command -v nvidia-smi >/dev/null && nvidia-smi
  [ -n "$nvcc" ] && "$nvcc" --version
  cmake --version | head -n 1
  command -v ninja >/dev/null && echo "ninja $(ninja --version)"
  echo "LibTorch CMake: ${torch_cmake_dir:-${wheel_prefix:-system}}"
  echo "NCCL include: ${nccl_include:-(CMake searches the CUDA toolkit)}; LibTorch's NCCL: ${expected_nccl:-unknown here}"
  local inc=
  [ -n "$torch_prefix" ] && inc=$torch_prefix/include
  if [ -n "$inc" ] && [ -f "$inc/gloo/algorithm.h" ]; then echo "gloo headers: $inc/gloo (LibTorch's own)"
  elif [ -f /usr/include/gloo/algorithm.h ]; then echo "gloo headers: /usr/include/gloo"
  elif [ -f "$root/.gpu-deps/include/gloo/algorithm.h" ]; then echo "gloo headers: $root/.gpu-deps/include/gloo"
  else echo "gloo headers: NOT FOUND in ${inc:-LibTorch}, /usr/include or .gpu-deps/include: core/train/distributed.cpp will not compile"
  fi
  return 0
}
step "environment" environment
nvcc_version=none
[ -n "$nvcc" ] && nvcc_version="$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') ($nvcc)"
figures[${#figures[@]}-1]="$smi_gpus GPU(s) in nvidia-smi, nvcc $nvcc_version"
# A toolkit of another CUDA major than the wheel's links a second CUDA runtime into the program.
if [ -n "$torch_cuda" ] && [ -n "$nvcc" ] && [ "${torch_cuda%%.*}" != "${nvcc_version%%.*}" ]; then
  echo "gpu-check: WARNING: torch was built for CUDA $torch_cuda, nvcc is CUDA ${nvcc_version%% *}: set CUDA_HOME to a CUDA ${torch_cuda%%.*} toolkit if the build or the runs fail"
  figures[${#figures[@]}-1]+="; WARNING: torch is CUDA $torch_cuda"
fi

# ---- build ----------------------------------------------------------------------------------------
configure() {
  local args=(-S "$root" -B "$build_dir" -Wno-dev -DCMAKE_BUILD_TYPE=Release -DTRAINLAB_GUI=OFF -DTRAINLAB_TESTS=OFF)
  command -v ninja >/dev/null && [ ! -f "$build_dir/Makefile" ] && args+=(-G Ninja)
  if [ -n "$torch_cmake_dir" ]; then args+=("-DTorch_DIR=$torch_cmake_dir")
  elif [ -n "$wheel_prefix" ]; then args+=("-DCMAKE_PREFIX_PATH=$wheel_prefix")
  fi
  if [ -n "$nvcc" ]; then
    # LibTorch's CMake files look for nvcc themselves and would take the first one on PATH.
    args+=("-DCMAKE_CUDA_COMPILER=$nvcc" "-DCUDAToolkit_ROOT=$cuda_home" "-DCUDA_TOOLKIT_ROOT_DIR=$cuda_home")
    # LibTorch <= 2.6 names CUDA::nvToolsExt, which CUDA 13 no longer ships (NVTX is header-only there):
    # the same shim as scripts/check-cuda-build.sh, only where the toolkit lacks the library.
    if ! ls "$cuda_home"/lib64/libnvToolsExt.so* "$cuda_home"/targets/*/lib/libnvToolsExt.so* >/dev/null 2>&1; then
      printf '%s\n' 'if(NOT TARGET CUDA::nvToolsExt)' '  add_library(CUDA::nvToolsExt INTERFACE IMPORTED)' 'endif()' >"$out/nvtx-shim.cmake"
      args+=("-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=$out/nvtx-shim.cmake")
    fi
  fi
  [ -n "$nccl_include" ] && args+=("-DTRAINLAB_NCCL_INCLUDE_DIR=$nccl_include")
  [ -n "$expected_nccl" ] && args+=("-DTRAINLAB_EXPECTED_NCCL_VERSION=$expected_nccl")
  args+=("${extra_cmake[@]}")
  echo "cmake ${args[*]}"
  cmake "${args[@]}"
}
built=0
if [ "$skip_build" = 1 ]; then
  skip "configure" "--skip-build"
  skip "build trainlab-cli" "--skip-build, using $cli"
  [ -x "$cli" ] || { echo "gpu-check: --skip-build: $cli does not exist (build first, or give --cli PATH)" >&2; exit 2; }
else
  if step "configure" configure; then
    log=${steplogs[${#steplogs[@]}-1]}
    fig=$(sed -n 's/^-- TrainLab: \(LibTorch .*\)/\1/p' "$log" | head -n 1)
    nccl_line=$(grep -m 1 'TrainLab: NCCL header' "$log")
    header=${nccl_line#*NCCL header }; header=${header%% *}
    case $nccl_line in
      *matches*) fig="$fig; NCCL header $header = LibTorch's NCCL" ;;
      *unknown*) fig="$fig; NCCL header $header, LibTorch's NCCL unknown (not compared)" ;;
    esac
    figures[${#figures[@]}-1]=$fig
    if [ "$configure_only" = 1 ]; then
      skip "build trainlab-cli" "--configure-only"
      finish
    fi
    build_started=$(date +%s)
    if step "build trainlab-cli" cmake --build "$build_dir" -j "$jobs" --target trainlab-cli; then
      built=1
      figures[${#figures[@]}-1]="$(( $(date +%s) - build_started )) s with $jobs jobs"
    fi
  else
    skip "build trainlab-cli" "configure failed"
  fi
  [ "$built" = 1 ] || finish
fi
step "trainlab-cli --version" "$cli" --version && figures[${#figures[@]}-1]=$("$cli" --version 2>&1 | head -n 1)
step "trainlab-cli devices" "$cli" devices
cuda_devices=$("$cli" devices 2>/dev/null | grep -c '^cuda:')
figures[${#figures[@]}-1]="$cuda_devices CUDA device(s) seen by LibTorch"

# ---- runs -----------------------------------------------------------------------------------------
mem_pid=
# nvidia-smi's index of cuda:N (CUDA_VISIBLE_DEVICES renumbers them; NVIDIA_VISIBLE... is the container's business).
smi_index() {
  local n=$1 list
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    IFS=, read -ra list <<<"$CUDA_VISIBLE_DEVICES"
    case ${list[n]:-} in ''|*[!0-9]*) echo "$n" ;; *) echo "${list[n]}" ;; esac
  else
    echo "$n"
  fi
}
mem_start() {
  mem_pid=
  [ "$smi_gpus" -gt 0 ] || return 0
  nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits -lms 200 >"$1" 2>/dev/null &
  mem_pid=$!
}
# mem_stop FILE DEVICES: the peak memory.used (MiB) over the samples of the GPUs in DEVICES.
mem_stop() {
  [ -n "$mem_pid" ] || { echo "-"; return; }
  kill "$mem_pid" 2>/dev/null; wait "$mem_pid" 2>/dev/null
  local d ids=
  for d in ${2//,/ }; do
    case $d in cuda:*) ids="$ids $(smi_index "${d#cuda:}")" ;; esac
  done
  awk -F', *' -v ids="$ids" 'BEGIN { n = split(ids, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
    ($1 in want) && $2 + 0 > peak { peak = $2 + 0 } END { if (peak) printf "%d MiB", peak; else print "-" }' "$1"
}
# last_epoch CSV: "sec/epoch img/s first-epoch-sec test-acc" from a metrics.csv (TrainLab) or the reference's rows.
last_epoch() {   # columns by name: test_acc, epoch_seconds, images_per_second
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { sec = $col["epoch_seconds"]; ips = $col["images_per_second"]; acc = $col["test_acc"]; if (NR == 2) first = sec }
    END { if (sec != "" && col["epoch_seconds"]) printf "%.2f %.0f %.2f %.4f\n", sec, ips, first, acc }' "$1"
}
# run_limit NAME: sets limit to this run's timeout (cut to what --time-limit leaves); false, with the run
# recorded as skipped, when under 30 s are left.
run_limit() {
  limit=$run_timeout
  [ -n "$time_limit" ] || return 0
  local left=$(( time_limit - ($(date +%s) - started) ))
  if [ "$left" -lt 30 ]; then skip "$1" "--time-limit $time_limit reached"; return 1; fi
  [ "$left" -lt "$limit" ] && limit=$left
  return 0
}
fmt_figures() { # sec ips first acc mem
  echo "$1 s/epoch, $2 img/s (epoch 1: $3 s), test acc $4, GPU mem $5"
}

# The synthetic set: 60,000 / 10,000 images whose class is drawn as a bright band over noise, so the
# accuracy after 2 epochs says whether training works (it should be near 1.0), not only its speed.
make_synthetic() {
  "$python" - "$1" <<'PY'
import os, random, struct, sys
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
rng = random.Random(0)
for name, n in (("train", 60000), ("t10k", 10000)):
    labels = bytes(rng.randrange(10) for _ in range(n))
    images = bytearray(os.urandom(n * 784).translate(bytes(b >> 2 for b in range(256))))   # noise in [0, 63]
    for i, c in enumerate(labels):
        for row in (2 + 2 * c, 3 + 2 * c):           # rows 2c+2 and 2c+3, columns 4..23: the class
            start = i * 784 + row * 28 + 4
            images[start:start + 20] = b"\xff" * 20
    for kind, magic, dims, payload in (("images", 2051, (n, 28, 28), images), ("labels", 2049, (n,), labels)):
        path = os.path.join(d, f"{name}-{kind}-idx{len(dims)}-ubyte")
        with open(path + ".tmp", "wb") as f:
            f.write(struct.pack(">" + "I" * (1 + len(dims)), magic, *dims))
            f.write(payload)
        os.replace(path + ".tmp", path)
PY
}
synthetic=$out/synthetic
if [ "$cuda_devices" -eq 0 ] && [ "$quick" = 0 ] && [ "${GPU_CHECK_ABLATION_ON_CPU:-0}" != 1 ]; then
  :   # nothing will train on it
elif [ -f "$synthetic/t10k-labels-idx1-ubyte" ] && [ "$(stat -c %s "$synthetic/train-images-idx3-ubyte" 2>/dev/null)" = 47040016 ]; then
  record "synthetic data" ok "reused $synthetic (60,000 / 10,000)" ""
else
  step "synthetic data" make_synthetic "$synthetic" && figures[${#figures[@]}-1]="60,000 / 10,000 images in $synthetic"
fi

# train NAME DATA PRECISION DEVICES BATCH LR [TRAIN_LIMIT TEST_LIMIT]: one TrainLab run, recorded with its figures.
declare -A trainlab_sec
train() {
  local name=$1 data=$2 precision=$3 devices=$4 batch=$5 lr=$6 train_limit=${7:-0} test_limit=${8:-0}
  local cfg memlog limit
  run_limit "$name" || return 0
  cfg=$out/configs/$(slug "$name").json memlog=$logs/$(slug "$name").mem
  mkdir -p "$out/configs" "$out/runs"
  # SPEED (the caller's environment): the config's speed object, e.g. {"channels_last": "off"}; default: TrainLab's.
  local speed=${SPEED:-'{}'}
  # PRESET (the caller's environment): the preset to start from (default d2l-1gpu); BATCH or LR "-": the preset's own.
  local preset=${PRESET:-d2l-1gpu} recipe=()
  sed -e "s|\"path\": \"fashion-mnist\"|\"path\": \"$data\"|" -e "s|\"precision\": \"[a-z0-9]*\"|\"precision\": \"$precision\", \"speed\": $speed|" \
      -e "0,/\"name\": \"[^\"]*\"/s||\"name\": \"gpucheck-$(slug "$name")\"|" "$root/resources/presets/$preset.json" >"$cfg"
  # SET (the caller's environment): KEY=VALUE words, each a --set of the run (e.g. "optimizer=adamw").
  local assignment
  for assignment in ${SET:-}; do recipe+=(--set "$assignment"); done
  [ "$batch" = - ] || recipe+=(--batch-size "$batch")
  [ "$lr" = - ] || recipe+=(--lr "$lr")
  mem_start "$memlog"
  step "$name" timeout -k 10 "$limit" "$cli" run "$cfg" --epochs "$epochs" "${recipe[@]}" \
    --devices "$devices" --train-limit "$train_limit" --test-limit "$test_limit" --runs-dir "$out/runs" --monitor
  local rc=$? mem
  mem=$(mem_stop "$memlog" "$devices")
  local i=$(( ${#names[@]} - 1 )) log=${steplogs[${#steplogs[@]}-1]} run
  run=$(sed -n 's/^run folder: //p' "$log" | head -n 1)
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then figures[i]="timed out after $limit s"; fi
  if [ -n "$run" ] && [ -f "$run/metrics.csv" ]; then
    local fig
    read -r sec ips first acc <<<"$(last_epoch "$run/metrics.csv")"
    if [ -n "$sec" ]; then
      fig=$(fmt_figures "$sec" "$ips" "$first" "$acc" "$mem")
      figures[i]="${figures[i]:+${figures[i]}; }$fig"
      trainlab_sec[$name]=$sec
    fi
  fi
  # The last epoch's time split (CUDA events on a GPU, the host clock on the CPU).
  local split
  split=$(grep -E '^ +time +compute' "$log" | tail -n 1 | sed -E 's/^ +time +//; s/  +/ /g')
  [ -n "$split" ] && figures[i]+="; split: $split"
  # The last epoch's device monitor (--monitor): this process's CPU and the GPUs the run trained on.
  local monitor
  monitor=$(awk -v devices=",$devices," '/^epoch [0-9]+\//{m = ""}
    /^  monitor / { line = substr($0, 11); id = line; sub(/^[^(]*\(/, "", id); sub(/\).*/, "", id)
                    if (line ~ /^cpu:/ || index(devices, "," id ",")) m = m (m == "" ? "" : " | ") line }
    END { print m }' "$log")
  [ -n "$monitor" ] && figures[i]+="; monitor: $monitor"
  # The warm-up before epoch 1 (speed.warmup): its seconds are in no epoch's time, so they are shown here. The
  # record's figure is the slowest replica's (the log line is rank 0's).
  local warm=
  [ -n "$run" ] && warm=$(sed -nE 's/.*"warmup_seconds": *([0-9.eE+-]+).*/\1/p' "$run/summary.json" 2>/dev/null \
    | awk 'NR == 1 && $1 > 0 { printf "%.2f", $1 }')
  [ -n "$warm" ] && figures[i]+="; warm-up ${warm} s before epoch 1"
  if grep -q 'CUDA graphs off' "$log"; then figures[i]+="; CUDA graphs OFF: $(grep -m 1 -o 'capturing.*' "$log")"
  elif grep -q 'CUDA graphs: captured' "$log"; then figures[i]+="; CUDA graphs captured"
  fi
}
# reference NAME DATA BATCH LR DEVICE [TRAIN TEST] [TRAINLAB_NAME]: bench/reference.py, side by side with a TrainLab run.
reference() {
  local name=$1 data=$2 batch=$3 lr=$4 device=$5 train_n=${6:-0} test_n=${7:-0} peer=${8:-}
  if [ "$use_reference" = 0 ]; then skip "$name" "--no-reference"; return; fi
  if ! "$python" -c 'import torch' >/dev/null 2>&1; then skip "$name" "$python has no torch"; return; fi
  local json memlog limit
  run_limit "$name" || return 0
  json=$out/runs/$(slug "$name").json memlog=$logs/$(slug "$name").mem
  mkdir -p "$out/runs"
  rm -f "$json"
  mem_start "$memlog"
  step "$name" timeout -k 10 "$limit" "$python" "$root/bench/reference.py" --data "$data" --epochs "$epochs" \
    --batch "$batch" --lr "$lr" --device "$device" --train "$train_n" --test "$test_n" --json "$json"
  local rc=$? mem i=$(( ${#names[@]} - 1 ))
  mem=$(mem_stop "$memlog" "$device")
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then figures[i]="timed out after $limit s"; fi
  if [ -f "$json" ]; then
    "$python" -c 'import json, sys
print("epoch,train_loss,train_acc,test_acc,epoch_seconds,images_per_second")
for r in json.load(open(sys.argv[1]))["epochs"]:
    print(",".join(str(r[k]) for k in ("epoch", "train_loss", "train_acc", "test_acc", "epoch_seconds", "images_per_second")))' \
      "$json" >"$json.csv" 2>/dev/null
    read -r sec ips first acc <<<"$(last_epoch "$json.csv")"
    if [ -n "$sec" ]; then
      local fig ratio=
      fig=$(fmt_figures "$sec" "$ips" "$first" "$acc" "$mem")
      if [ -n "$peer" ] && [ -n "${trainlab_sec[$peer]:-}" ]; then
        ratio=$(awk -v r="$sec" -v t="${trainlab_sec[$peer]}" 'BEGIN { if (t > 0) printf "%.2f", r / t }')
        fig="$fig; TrainLab ${trainlab_sec[$peer]} s/epoch: ${ratio}x the reference's speed"
      fi
      figures[i]="${figures[i]:+${figures[i]}; }$fig"
    fi
  fi
}

# The speed ablation (issue 22): each switch added to the one before, batch 256 on cuda:0, then the chapter's
# experiment with all of them. SPEED is the config's speed object for that row.
abl_device=cuda:0 abl_limits=(0 0)
# walled COMMAND...: runs it and puts the wall time from launch to its end in front of its row's figures.
walled() {
  local t0 i
  t0=$(date +%s)
  "$@"
  i=$(( ${#names[@]} - 1 ))
  [ "${results[i]}" = ok ] && figures[i]="wall $(( $(date +%s) - t0 )) s from launch to the last epoch; ${figures[i]}"
  return 0
}
ablation_runs() { # LABEL DATA
  local label=$1 data=$2 row name precision cl fused graphs warm
  # name|precision|channels_last|fused_sgd|cuda_graphs|warmup: each row adds one switch to the row before.
  local rows=(
    "today's path (fp32, NCHW, SGD loop, eager)|fp32|off|false|false|off"
    "+ step warm-up|fp32|off|false|false|on"
    "+ channels_last|fp32|on|false|false|on"
    "+ bf16|bf16|on|false|false|on"
    "+ fused SGD|bf16|on|true|false|on"
    "+ CUDA graphs (all on)|bf16|on|true|true|on"
  )
  for row in "${rows[@]}"; do
    IFS='|' read -r name precision cl fused graphs warm <<<"$row"
    SPEED="{\"channels_last\": \"$cl\", \"fused_sgd\": $fused, \"cuda_graphs\": $graphs, \"warmup\": \"$warm\"}" \
      train "$label: $name" "$data" "$precision" "$abl_device" 256 0.1 "${abl_limits[@]}"
  done
  reference "$label: the chapter's program (fp32, timed its way)" "$data" 256 0.1 "$abl_device" "${abl_limits[@]}" "$label: + CUDA graphs (all on)"
  SPEED='{"channels_last": "on", "fused_sgd": true, "cuda_graphs": true, "warmup": "on"}' epochs=10 \
    walled train "$label: the chapter's experiment, 10 epochs, all on" "$data" bf16 "$abl_device" 256 0.1 "${abl_limits[@]}"
  # Issue 24's preset beside it: its own recipe (batch, schedule, augmentation, label smoothing), 10 epochs.
  PRESET=fmnist-fast epochs=10 walled train "$label: the fmnist-fast preset, 10 epochs" "$data" bf16 "$abl_device" - - "${abl_limits[@]}"
  # AdamW's update (about ten multi-tensor kernels fused, about ten per parameter as a loop), last: where time is left.
  local fused
  for fused in true false; do
    SET=optimizer=adamw SPEED="{\"channels_last\": \"on\", \"fused_sgd\": $fused, \"cuda_graphs\": false, \"warmup\": \"on\"}" \
      train "$label: AdamW, lr 1e-3, fused_sgd $fused (bf16, channels_last, warm-up)" "$data" bf16 "$abl_device" 256 0.001 "${abl_limits[@]}"
  done
}
if [ "$cuda_devices" -eq 0 ]; then
  if [ "$smi_gpus" -gt 0 ]; then
    echo "gpu-check: nvidia-smi lists $smi_gpus GPU(s) but trainlab-cli sees no CUDA device: a CPU-only LibTorch, or a driver/runtime mismatch (see the logs)"
    record "GPU runs" FAILED "nvidia-smi: $smi_gpus GPU(s), trainlab-cli devices: none" ""
    finish
  fi
  echo "gpu-check: no GPU on this machine (nvidia-smi: ${smi_gpus}, trainlab-cli devices: no cuda:N); the build is checked, nothing to time on a GPU"
  if [ "$ablation" = 1 ] && [ "${GPU_CHECK_ABLATION_ON_CPU:-0}" = 1 ]; then
    # The ablation's runs, figures and table on the CPU with 256 / 128 images: checks the script, times nothing.
    abl_device=cpu abl_limits=(256 128)
    ablation_runs synthetic "$synthetic"
    finish
  fi
  if [ "$quick" = 1 ]; then
    # The run, figures and summary path, on the CPU: a few hundred images, one epoch (with the warm-up, off by default
    # on the CPU, so its figure is read too).
    SPEED='{"warmup": "on"}' train "smoke: cpu fp32 bs 64 (256 images)" "$synthetic" fp32 cpu 64 0.05 256 128
    reference "smoke: reference cpu bs 64 (256 images)" "$synthetic" 64 0.05 cpu 256 128 "smoke: cpu fp32 bs 64 (256 images)"
  fi
  skip "GPU runs" "no GPU"
  finish
fi

# What each data set gets. Quick: the synthetic set cut to 4,096 / 1,024, batch 256, the largest world only.
limit_train=0 limit_test=0
[ "$quick" = 1 ] && { limit_train=4096; limit_test=1024; }
gpu_runs() { # LABEL DATA FULL(1: every GPU count)
  local label=$1 data=$2 full=$3 b p n devs lr
  local batches="256 1024"
  [ "$quick" = 1 ] && batches=256
  for b in $batches; do
    lr=$(awk -v b="$b" 'BEGIN { printf "%g", 0.1 * b / 256 }')   # d2l: lr 0.1 at 256, scaled with the batch
    for p in fp32 bf16; do
      train "$label: 1 GPU $p bs $b" "$data" "$p" cuda:0 "$b" "$lr" "$limit_train" "$limit_test"
    done
    reference "$label: reference 1 GPU fp32 bs $b" "$data" "$b" "$lr" cuda:0 "$limit_train" "$limit_test" "$label: 1 GPU fp32 bs $b"
  done
  # The mixed world (per-thread streams, NCCL refused, Gloo across cuda:0 and the CPU): 6,400 images,
  # since the CPU replica sets the pace.
  train "$label: cuda:0 + cpu fp32 bs 256 (6,400 images)" "$data" fp32 cuda:0,cpu 256 0.1 6400 1000
  local first=2
  [ "$full" = 1 ] && [ "$quick" = 0 ] || first=$cuda_devices
  for (( n = first; n <= cuda_devices; n++ )); do
    [ "$n" -ge 2 ] || continue
    devs=$(seq -s, -f 'cuda:%g' 0 $((n - 1)))
    b=$((256 * n)); lr=$(awk -v n="$n" 'BEGIN { printf "%g", 0.1 * n }')
    train "$label: $n GPUs fp32 bs $b" "$data" fp32 "$devs" "$b" "$lr" "$limit_train" "$limit_test"
  done
  [ "$cuda_devices" -ge 2 ] || skip "$label: 2..N GPUs" "only 1 CUDA device"
}
if [ "$ablation" = 1 ]; then
  data=$synthetic label=synthetic
  if [ "$use_real" = 1 ]; then
    real=${TRAINLAB_DATA_DIR:-$("$cli" dataset where 2>/dev/null | head -n 1)}
    if [ -n "$real" ] && "$cli" dataset verify "$real" >"$logs/real-data-verify.log" 2>&1; then data=$real label=real; fi
  fi
  ablation_runs "$label" "$data"
  finish
fi
gpu_runs synthetic "$synthetic" 1

real=
if [ "$use_real" = 1 ]; then
  real=${TRAINLAB_DATA_DIR:-$("$cli" dataset where 2>/dev/null | head -n 1)}
  if [ -n "$real" ] && "$cli" dataset verify "$real" >"$logs/real-data-verify.log" 2>&1; then
    record "real data" ok "$real ($(grep -o 'official Fashion-MNIST\|custom IDX data' "$logs/real-data-verify.log" | head -n 1))" "$logs/real-data-verify.log"
    gpu_runs real "$real" 0
  else
    skip "real data" "none at ${real:-the managed folder} (trainlab-cli dataset download, or TRAINLAB_DATA_DIR)"
  fi
else
  skip "real data" "$([ "$quick" = 1 ] && echo --quick || echo --no-real)"
fi
finish
