#!/usr/bin/env bash
# Builds core and trainlab-cli against a real CUDA LibTorch 2.x (Debian trixie's libtorch-cuda 2.6,
# fetched from Debian's archive) and this machine's CUDA toolkit: no GPU needed. It proves the
# TRAINLAB_WITH_CUDA / TRAINLAB_WITH_NCCL code and the TORCH_VERSION_MAJOR >= 2 branches compile and
# link; the binary can't run here (trixie's libraries want a newer glibc and the CUDA 12 runtime).
# --fetch-only: download and unpack the LibTorch, then stop (CI runs that beside the main build).
set -euo pipefail
cd "$(dirname "$0")/.."
fetch_only=0
case ${1:-} in
  --fetch-only) fetch_only=1 ;;
  '') ;;
  *) echo "check-cuda-build: unknown argument: $1 (only --fetch-only)" >&2; exit 2 ;;
esac
cuda=${CUDA_HOME:-/usr/local/cuda}
cudart=
for dir in lib64 lib targets/x86_64-linux/lib; do
  [ -e "$cuda/$dir/libcudart.so" ] && { cudart=$cuda/$dir/libcudart.so; break; }
done
if [ ! -x "$cuda/bin/nvcc" ] || [ ! -f "$cuda/include/nccl.h" ] || [ ! -f "$cuda/include/cuda_runtime.h" ] || [ -z "$cudart" ]; then
  echo "check-cuda-build: SKIPPED: no CUDA toolkit with nvcc, cuda_runtime.h, nccl.h and libcudart.so in $cuda (set CUDA_HOME)"
  exit 0
fi
start=$(date +%s)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=$PWD/.deps/cuda-libtorch
root=$cache/root
lib=$root/usr/lib/x86_64-linux-gnu
# name, archive path, sha256 (from trixie's Packages index)
debs=(
  "libtorch-cuda-dev pool/contrib/p/pytorch-cuda/libtorch-cuda-dev_2.6.0+dfsg-7+b1_amd64.deb 8906705aa8824b1ad3783b80688accd5bc05fedd97d0ccb40cb461f8f43f5182"
  "libtorch-cuda-2.6 pool/contrib/p/pytorch-cuda/libtorch-cuda-2.6_2.6.0+dfsg-7+b1_amd64.deb fc948a2688581480b96afdbd6b67b822138f38f6d491e4d59e51d89fc5a9e070"
  "libgloo-dev pool/main/g/gloo/libgloo-dev_0.0~git20231202.5354032-3+b2_amd64.deb 5fd43a7c594ffa4baccf00ba797c215d4485ab617058fd04b69980dcbddc7cf2"
)
mkdir -p "$cache"
free_kb=$(df -Pk "$cache" | awk 'NR == 2 {print $4}')
if [ ! -f "$cache/.complete" ] && [ "$free_kb" -lt $((3 * 1024 * 1024)) ]; then
  echo "check-cuda-build: SKIPPED: the CUDA LibTorch and its build need about 3 GB; $((free_kb / 1024)) MB free in .deps"
  exit 0
fi
if [ ! -f "$cache/.complete" ]; then
  rm -rf "$root"
  mkdir -p "$root"
  for entry in "${debs[@]}"; do
    read -r name path sha <<<"$entry"
    file=$cache/$(basename "$path")
    if [ ! -f "$file" ] || ! echo "$sha  $file" | sha256sum -c --status; then
      echo "check-cuda-build: fetching $name"
      curl -fsS --retry 3 -o "$file.tmp" "$mirror/$path"
      echo "$sha  $file.tmp" | sha256sum -c --quiet || { echo "check-cuda-build: $name: checksum mismatch" >&2; exit 1; }
      mv "$file.tmp" "$file"
    fi
    if [ "$name" = libtorch-cuda-2.6 ]; then
      # Only the libraries the CLI links; the Python binding alone is 19 MB more.
      dpkg-deb --fsys-tarfile "$file" | tar -x -C "$root" --wildcards './usr/lib/x86_64-linux-gnu/lib*.so.2.6*' --exclude='*torch_python*'
    else
      dpkg-deb -x "$file" "$root"
    fi
  done
  # CMake files of LibTorch <= 2.6 name CUDA::nvToolsExt, which CUDA 13 no longer ships (NVTX is header-only now).
  echo 'if(NOT TARGET CUDA::nvToolsExt)
  add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
endif()' > "$cache/nvtx-shim.cmake"
  touch "$cache/.complete"
fi
if [ "$fetch_only" = 1 ]; then
  echo "check-cuda-build: LibTorch 2.6 (CUDA) fetched in $(( $(date +%s) - start )) s"
  exit 0
fi
mkdir -p build-cuda
# FindCUDA would otherwise take its toolkit from the first nvcc on PATH (a wrapper in /usr/local/bin on CI).
# TorchConfig looks for these in <prefix>/lib, after the system paths, where Debian's 1.13 would win.
# Only compiled and linked here, never run: -O0 without debug information halves the compile time.
cmake -S . -B build-cuda -G Ninja -Wno-dev -DTRAINLAB_GUI=OFF -DTRAINLAB_TESTS=OFF -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -DNDEBUG" \
  -DCUDAToolkit_ROOT="$cuda" -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" \
  -DCUDA_TOOLKIT_ROOT_DIR="$cuda" -DCUDA_INCLUDE_DIRS="$cuda/include" -DCUDA_CUDART_LIBRARY="$cudart" \
  -DTorch_DIR="$lib/cmake/Torch" -DCaffe2_DIR="$lib/cmake/Caffe2" \
  -DTORCH_LIBRARY="$lib/libtorch.so" -Dc10_LIBRARY="$lib/libc10.so" -DC10_CUDA_LIBRARY="$lib/libc10_cuda.so" \
  -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$cache/nvtx-shim.cmake" \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,--allow-shlib-undefined" > build-cuda/configure.log 2>&1 \
  || { cat build-cuda/configure.log; exit 1; }
grep -q 'CUDA build: ON' build-cuda/configure.log || { cat build-cuda/configure.log; echo "check-cuda-build: torch_cuda target missing" >&2; exit 1; }
grep -q 'LibTorch 2\.' build-cuda/configure.log || { cat build-cuda/configure.log; echo "check-cuda-build: not LibTorch 2.x" >&2; exit 1; }
grep -q 'TRAINLAB_NCCL_INCLUDE_DIR:PATH=/' build-cuda/CMakeCache.txt || { echo "check-cuda-build: nccl.h not found" >&2; exit 1; }
# cmake/TrainLabNccl.cmake read the header's version (Debian's LibTorch names no NCCL version of its own: not compared).
nccl=$(sed -n 's/^-- TrainLab: \(NCCL header [0-9.]*\).*/\1/p' build-cuda/configure.log)
[ -n "$nccl" ] || { cat build-cuda/configure.log; echo "check-cuda-build: the NCCL header's version was not checked" >&2; exit 1; }
cmake --build build-cuda -j "$(nproc)" --target trainlab-cli
cli=build-cuda/app/trainlab-cli
# The CUDA and NCCL paths are in the binary: it needs LibTorch's CUDA library and calls ProcessGroupNCCL.
needed=$(readelf -d "$cli")
undefined=$(nm -DC --undefined-only "$cli")
for want in libtorch_cuda.so.2 libc10_cuda.so.2; do
  grep -qF "[$want" <<<"$needed" || { echo "check-cuda-build: $cli does not link $want" >&2; exit 1; }
done
grep -qF 'c10d::ProcessGroupNCCL::ProcessGroupNCCL(' <<<"$undefined" \
  || { echo "check-cuda-build: $cli has no ProcessGroupNCCL reference" >&2; exit 1; }
if grep -qF 'libtorch.so.1' <<<"$needed" || grep -qF 'libc10.so.1' <<<"$needed"; then
  echo "check-cuda-build: $cli also links Debian's LibTorch 1.13" >&2; exit 1
fi
echo "check-cuda-build: core and trainlab-cli built and linked against CUDA LibTorch 2.6 ($(basename "$(readlink -f "$cuda")"), $nccl) in $(( $(date +%s) - start )) s"
