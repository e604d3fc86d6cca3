#!/usr/bin/env bash
# install-deps.sh — installs the Debian 12 packages LoRAscope builds, tests and packages with, and
# nothing else. Idempotent: when every package is installed it runs no apt-get at all (no
# `apt-get update`); otherwise it updates once and installs only what is missing.
#   scripts/install-deps.sh          build tools, Qt 6, JSON, BLAS, PCRE2, utf8proc, the test and
#                                    packaging tools (Xvfb, help2man, the desktop-file and
#                                    AppStream validators, debootstrap for scripts/check-deb.sh)
#   scripts/install-deps.sh --hip    also the AMD HIP toolchain for the hip-amd preset
#   scripts/install-deps.sh --list   prints the package names (one a line) and exits
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang-format
  qt6-base-dev qt6-base-dev-tools qt6-charts-dev libqt6opengl6-dev libgl-dev
  nlohmann-json3-dev libopenblas-dev libpcre2-dev libutf8proc-dev
  xvfb xauth
  help2man desktop-file-utils appstream debootstrap zstd
)
hip=false
list=false
for arg in "$@"; do
  case $arg in
    --hip) hip=true ;;
    --list) list=true ;;
    *)
      echo "usage: scripts/install-deps.sh [--hip] [--list]" >&2
      exit 2
      ;;
  esac
done
if $hip; then
  # Debian 12's ROCm 5.2: hipcc (clang 15), the HIP runtime, device libraries and rocm-smi.
  packages+=(hipcc libamdhip64-dev rocm-device-libs librocm-smi-dev clang-15)
fi
if $list; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
