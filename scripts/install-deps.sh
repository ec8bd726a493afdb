#!/usr/bin/env bash
# Installs every Debian package TrainLab's build, tests and app need; quiet when all are there.
# --package: also what building and checking the .deb needs (dpkg-shlibdeps, lintian, validators).
set -euo pipefail
packages=(cmake ninja-build g++ ccache pkg-config
          qt6-base-dev qt6-charts-dev libqt6opengl6-dev qt6-svg-dev
          libtorch-dev libdnnl-dev libgloo-dev nlohmann-json3-dev zlib1g-dev libcurl4-openssl-dev libssl-dev libstb-dev xvfb xauth
          python3-protobuf python3-crc32c)
if [ "${1:-}" = "--package" ]; then
  packages+=(dpkg-dev file desktop-file-utils appstream lintian man-db)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
