#!/usr/bin/env bash
# render-icons.sh — renders resources/lorascope.svg into the PNG sizes in resources/icons/
# (installed into the hicolor theme, and embedded in the app by resources/lorascope.qrc).
# Run after editing the SVG and commit the PNGs; needs rsvg-convert (Debian: librsvg2-bin).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v rsvg-convert >/dev/null || {
  echo "render-icons: rsvg-convert is missing: apt-get install librsvg2-bin" >&2
  exit 1
}
for size in 16 24 32 48 64 128 256 512; do
  rsvg-convert --width "$size" --height "$size" resources/lorascope.svg \
    --output "resources/icons/lorascope-$size.png"
done
echo "render-icons: resources/icons/lorascope-{16..512}.png"
