#!/usr/bin/env bash
# Copies headers a PyTorch-only GPU machine lacks (nlohmann_json, gloo, zlib) into .gpu-deps/ (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu-deps/include
cp -r /usr/include/nlohmann .gpu-deps/include/
[ -d /usr/include/gloo ] && cp -r /usr/include/gloo .gpu-deps/include/
cp /usr/include/zlib.h /usr/include/x86_64-linux-gnu/zconf.h .gpu-deps/include/ 2>/dev/null || cp /usr/include/zlib.h /usr/include/zconf.h .gpu-deps/include/
du -sh .gpu-deps
