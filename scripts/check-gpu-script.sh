#!/usr/bin/env bash
# CI for what the GPU check can show without a GPU (issue 13):
#  1. bench/gpu-check.sh parses (bash -n, shellcheck where installed), --help exits 0, bad arguments exit 2;
#  2. cmake/TrainLabNccl.cmake (the NCCL header against LibTorch's NCCL) on fake wheel and LibTorch
#     layouts, in CMake's script mode: match, mismatch, each detection source, unknown, bad input;
#  3. gpu-check.sh's real configure step against the system LibTorch, and, where scripts/check-cuda-build.sh
#     left its CUDA LibTorch 2.6 in .deps/cuda-libtorch, against that (nvcc, the nvToolsExt shim, the
#     NCCL check) once matching and once with a wrong expected NCCL version, which must stop it;
#  4. its CPU-only path with the main build's trainlab-cli (--quick --cli): "no GPU", a tiny CPU run
#     in the summary, exit 0.
# Under a minute on 2 cores: no compile (the build step itself is what check-cuda-build.sh compiles).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAILED: $*" >&2; failed=$((failed + 1)); }
# expect RC PATTERN NAME COMMAND...: the exit status is RC and the output, its lines joined and spaces
# squeezed (CMake wraps its messages), matches the extended regex PATTERN.
expect() {
  local want=$1 pattern=$2 name=$3 rc=0; shift 3
  "$@" >"$tmp/out" 2>&1 || rc=$?
  tr '\n' ' ' <"$tmp/out" | tr -s ' ' >"$tmp/joined"
  if [ "$rc" -ne "$want" ]; then bad "$name: exit $rc, expected $want"; tail -n 20 "$tmp/out" >&2; return 0; fi
  if ! grep -Eq -- "$pattern" "$tmp/joined"; then bad "$name: output lacks /$pattern/"; tail -n 20 "$tmp/out" >&2; return 0; fi
  ok "$name"
}
# check NAME COMMAND...: ok when the command succeeds.
check() {
  local name=$1; shift
  if "$@" >"$tmp/out" 2>&1; then ok "$name"; else bad "$name"; tail -n 20 "$tmp/out" >&2; fi
}
gc=bench/gpu-check.sh

# 1. the script itself and its arguments
check "bash -n $gc" bash -n "$gc"
if command -v shellcheck >/dev/null; then
  check "shellcheck" shellcheck "$gc" scripts/check-gpu-script.sh
else
  echo "skipped: shellcheck not installed"
fi
expect 0 '^usage: bench/gpu-check.sh' "--help" bash "$gc" --help
expect 0 '--torch-dir' "-h" bash "$gc" -h
expect 2 'unknown argument: --bogus' "unknown flag" bash "$gc" --bogus
expect 2 'unknown argument: extra' "stray argument" bash "$gc" --quick extra
expect 2 '--out needs a value' "--out without a value" bash "$gc" --out
expect 2 'positive whole number' "--jobs 0" bash "$gc" --jobs 0
expect 2 'positive whole number' "--epochs=x" bash "$gc" --epochs=x
expect 2 'no such file or folder' "--torch-dir missing" bash "$gc" --torch-dir "$tmp/none"
expect 2 'no TorchConfig.cmake' "--torch-dir without LibTorch" bash "$gc" --torch-dir "$tmp" --out "$tmp/o"
expect 2 'not an executable file' "--cli missing" bash "$gc" --cli "$tmp/none"
expect 2 'exclude each other' "--configure-only --skip-build" bash "$gc" --configure-only --skip-build
expect 2 'exclude each other' "--quick --ablation" bash "$gc" --quick --ablation

# 2. the NCCL version check, in script mode
cat >"$tmp/nccl.cmake" <<'EOF'
include(${SRC}/cmake/TrainLabNccl.cmake)
trainlab_check_nccl("${INC}" "${PREFIX}" "${EXPECTED}" ${ENFORCE})
message(STATUS "result: ${TRAINLAB_NCCL_VERSION}")
EOF
header() { mkdir -p "$1"; printf '#define NCCL_MAJOR %s\n#define NCCL_MINOR %s\n#define NCCL_PATCH %s\n#define NCCL_SUFFIX ""\n' "$2" "$3" "$4" >"$1/nccl.h"; }
nccl() { # INC PREFIX EXPECTED ENFORCE
  cmake -DSRC="$PWD" -DINC="$1" -DPREFIX="$2" -DEXPECTED="$3" -DENFORCE="$4" -P "$tmp/nccl.cmake"
}
wheel=$tmp/wheel/site-packages
mkdir -p "$wheel/torch/lib" "$wheel/torch-2.6.0.dist-info"
header "$wheel/nvidia/nccl/include" 2 21 5
header "$tmp/other" 2 28 9
printf 'Name: torch\nRequires-Dist: nvidia-nccl-cu12==2.21.5; platform_system == "Linux" and platform_machine == "x86_64"\n' \
  >"$wheel/torch-2.6.0.dist-info/METADATA"
expect 0 'NCCL header 2\.21\.5 .*matches LibTorch.s NCCL 2\.21\.5 .*METADATA' "nccl: wheel pin, matching header" \
  nccl "$wheel/nvidia/nccl/include" "$wheel/torch" "" ON
expect 1 'NCCL header/ABI mismatch: .*is NCCL 2\.28\.9, LibTorch.s NCCL is 2\.21\.5' "nccl: wheel pin, other header stops it" \
  nccl "$tmp/other" "$wheel/torch" "" ON
expect 0 'Warning.*NCCL header/ABI mismatch' "nccl: TRAINLAB_NCCL_VERSION_CHECK=OFF only warns" \
  nccl "$tmp/other" "$wheel/torch" "" OFF
expect 0 'matches LibTorch.s NCCL 2\.28 \(TRAINLAB_EXPECTED_NCCL_VERSION\)' "nccl: explicit X.Y wins over the pin" \
  nccl "$tmp/other" "$wheel/torch" 2.28 ON
expect 1 'must be X\.Y\.Z or X\.Y' "nccl: malformed TRAINLAB_EXPECTED_NCCL_VERSION" \
  nccl "$tmp/other" "$wheel/torch" 2.x ON
rm "$wheel/torch-2.6.0.dist-info/METADATA"
mkdir -p "$wheel/nvidia_nccl_cu12-2.21.5.dist-info"
expect 0 'matches LibTorch.s NCCL 2\.21\.5 .*nvidia_nccl_cu12-2\.21\.5\.dist-info' "nccl: installed nvidia-nccl wheel" \
  nccl "$wheel/nvidia/nccl/include" "$wheel/torch" "" ON
zip=$tmp/libtorch
mkdir -p "$zip/lib"
: >"$zip/lib/libnccl.so.2.21.5"
expect 1 'is NCCL 2\.28\.9, LibTorch.s NCCL is 2\.21\.5 \(from .*libnccl\.so\.2\.21\.5\)' "nccl: libnccl.so.X.Y.Z next to LibTorch" \
  nccl "$tmp/other" "$zip" "" ON
rm "$zip/lib/libnccl.so.2.21.5"
printf '\0\0junk\0NCCL version 2.28.9+cuda13.0\0more\0' >"$zip/lib/libnccl.so.2"
expect 0 'matches LibTorch.s NCCL 2\.28\.9 \(the "NCCL version" string' "nccl: version string inside libnccl.so.2" \
  nccl "$tmp/other" "$zip" "" ON
rm "$zip/lib/libnccl.so.2"
expect 0 'NCCL header 2\.28\.9 .*LibTorch.s NCCL version unknown, not compared' "nccl: unknown (Debian's layout)" \
  nccl "$tmp/other" "$zip" "" ON
mkdir -p "$tmp/notnccl"; echo '#define FOO 1' >"$tmp/notnccl/nccl.h"
expect 1 'has no NCCL_MAJOR' "nccl: a header without NCCL's version macros" nccl "$tmp/notnccl" "$zip" "" ON

# 3. gpu-check.sh's configure step, for real
expect 0 'configure +ok +LibTorch [0-9.]+, CUDA build: OFF' "gpu-check configure (system LibTorch)" \
  bash "$gc" --configure-only --build-dir build-gpucheck-ci --out "$tmp/configure"
cuda=${CUDA_HOME:-/usr/local/cuda}
deps=${TRAINLAB_CUDA_LIBTORCH:-$PWD/.deps/cuda-libtorch}   # where check-cuda-build.sh unpacks it
lib=$deps/root/usr/lib/x86_64-linux-gnu
if [ -f "$deps/.complete" ] && [ -x "$cuda/bin/nvcc" ] && [ -f "$cuda/include/nccl.h" ]; then
  # The hints check-cuda-build.sh gives Debian's layout (TorchConfig would otherwise take Debian's 1.13 libraries).
  hints=(--torch-dir "$lib/cmake/Torch" --cmake-arg "-DCaffe2_DIR=$lib/cmake/Caffe2"
         --cmake-arg "-DTORCH_LIBRARY=$lib/libtorch.so" --cmake-arg "-Dc10_LIBRARY=$lib/libc10.so"
         --cmake-arg "-DC10_CUDA_LIBRARY=$lib/libc10_cuda.so" --cmake-arg "-DCUDA_INCLUDE_DIRS=$cuda/include")
  version=$(awk '/^#define NCCL_(MAJOR|MINOR|PATCH) / {v = v (v == "" ? "" : ".") $3} END {print v}' "$cuda/include/nccl.h")
  expect 0 "configure +ok +LibTorch 2\.[0-9.]+, CUDA build: ON; NCCL header $version = LibTorch's NCCL" \
    "gpu-check configure (CUDA LibTorch 2.6, nvcc, NCCL $version expected)" \
    env CUDA_HOME="$cuda" bash "$gc" --configure-only --build-dir build-gpucheck-ci-cuda --out "$tmp/cuda" "${hints[@]}" \
      --cmake-arg "-DTRAINLAB_EXPECTED_NCCL_VERSION=$version"
  check "gpu-check names nvcc to CMake" grep -q "CMAKE_CUDA_COMPILER:.*=$cuda/bin/nvcc" build-gpucheck-ci-cuda/CMakeCache.txt
  expect 1 'configure FAILED exit 1' \
    "gpu-check configure stops on an NCCL mismatch" \
    env CUDA_HOME="$cuda" bash "$gc" --configure-only --build-dir build-gpucheck-ci-cuda --out "$tmp/cuda2" "${hints[@]}" \
      --cmake-arg "-DTRAINLAB_EXPECTED_NCCL_VERSION=1.0.0"
  check "the mismatch is in the configure log" grep -rq 'NCCL header/ABI mismatch' "$tmp/cuda2/logs"
else
  echo "skipped: gpu-check configure against CUDA LibTorch 2.6 (no .deps/cuda-libtorch from check-cuda-build.sh, or no CUDA toolkit with nccl.h in $cuda)"
fi

# 4. the CPU-only path, with the CLI the main build made
cli=${CLI:-build/app/trainlab-cli}
if [ -x "$cli" ]; then
  expect 0 'no GPU on this machine' "gpu-check --quick on a machine without a GPU says so and exits 0" \
    bash "$gc" --quick --cli "$cli" --out "$tmp/cpu"
  summary=$tmp/cpu/summary.txt
  if grep -Eq '^smoke: cpu fp32 .* ok +[0-9.]+ s/epoch, [0-9]+ img/s .*test acc [0-9.]+.*; monitor: cpu: mean [0-9]+% of.*; warm-up [0-9]+\.[0-9]{2} s before epoch 1' "$summary" \
     && grep -Eq '^GPU runs +skipped +no GPU' "$summary" && grep -Eq '^trainlab-cli devices +ok' "$summary"; then
    ok "the summary lists each step with its result and figures"
  else
    bad "summary: $(cat "$summary")"
  fi
else
  echo "skipped: the CPU-only path ($cli not built)"
fi
rm -rf build-gpucheck-ci build-gpucheck-ci-cuda
echo "check-gpu-script: $(( $(date +%s) - start )) s"
echo "gpu-check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
