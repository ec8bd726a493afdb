#!/usr/bin/env bash
# Copies headers a PyTorch-only GPU machine lacks (nlohmann_json, gloo, zlib) into .gpu-deps/ (git-ignored).
# Optional now: nlohmann_json and zlib's headers are vendored in third_party/include; this is still the way
# to bring Gloo's headers for a LibTorch without include/gloo (bench/gpu-check.sh's environment step says
# which it found). TRAINLAB_DEPS_DIR wins over third_party/include.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu-deps/include
cp -r /usr/include/nlohmann .gpu-deps/include/
[ -d /usr/include/gloo ] && cp -r /usr/include/gloo .gpu-deps/include/
cp /usr/include/zlib.h /usr/include/x86_64-linux-gnu/zconf.h .gpu-deps/include/ 2>/dev/null || cp /usr/include/zlib.h /usr/include/zconf.h .gpu-deps/include/
du -sh .gpu-deps
