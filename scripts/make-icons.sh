#!/usr/bin/env bash
# Renders the PNG icon sizes from the SVG (needs rsvg-convert from librsvg2-bin); the PNGs are committed.
set -euo pipefail
cd "$(dirname "$0")/../resources/icons"
id=org.trainlab.TrainLab
command -v rsvg-convert >/dev/null || { echo "make-icons: rsvg-convert missing (apt-get install librsvg2-bin)" >&2; exit 1; }
for n in 16 32 48 64 128 256; do
  mkdir -p "${n}x${n}"
  rsvg-convert -w "$n" -h "$n" "$id.svg" -o "${n}x${n}/$id.png"
done
