#!/usr/bin/env bash
# Installs what is missing, builds TrainLab and makes the Debian package build/trainlab_<version>_<arch>.deb.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --package
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j "$(nproc)"
rm -f build/trainlab_*.deb
(cd build && cpack -G DEB)
# The one .deb just made, for scripts/check-package.sh and the reader.
echo "package: $(ls "$PWD"/build/trainlab_*.deb)"
