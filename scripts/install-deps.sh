#!/usr/bin/env bash
# install-deps.sh — installs the Debian 12 packages LoRAscope builds, tests and packages with, and
# nothing else. Idempotent: when every package is installed it runs no apt-get at all (no
# `apt-get update`); otherwise it updates once and installs only what is missing.
#   scripts/install-deps.sh          build tools (ccache among them), Qt 6, JSON, BLAS, PCRE2, utf8proc, the test and
#                                    packaging tools (Xvfb, help2man, the desktop-file and
#                                    AppStream validators, debootstrap for scripts/check-deb.sh),
#                                    PyTorch for the tests of `supervise` (python3-torch)
#   scripts/install-deps.sh --hip    also debootstrap and zstd, for the ROCm 6.4 chroot in which CI builds the
#                                    hip-amd flavour (scripts/rocm-chroot.sh); a ROCm install of
#                                    your own needs none of it (README)
#   scripts/install-deps.sh --sanitize   also clang 15, for the sanitize preset (ASan/UBSan, fuzz)
#   scripts/install-deps.sh --windows    also mingw-w64 (posix threads) and wine64, for the
#                                    Windows cross-build tested under Wine (preset mingw), nsis
#                                    (makensis, for its installer), and Debian's source index
#                                    (deb-src), from which scripts/mingw-deps.sh builds its
#                                    third-party libraries and scripts/mingw-qt.sh Qt; xdotool,
#                                    x11-apps (xwd) and netpbm, with which
#                                    scripts/check-windows-gui.sh drives and photographs
#                                    lorascope.exe under Wine
#   scripts/install-deps.sh --list   prints the package names (one a line) and exits
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang-format
  # Every compile goes through ccache when it is installed (CMakeLists.txt): a rebuild of the same
  # sources, in this clone or another, is a cache hit.
  ccache
  # The linker of native builds when installed (CMakeLists.txt, LORASCOPE_MOLD)
  mold
  qt6-base-dev qt6-base-dev-tools qt6-charts-dev libqt6opengl6-dev libgl-dev
  nlohmann-json3-dev libopenblas-dev libpcre2-dev libutf8proc-dev
  xvfb xauth
  help2man desktop-file-utils appstream debootstrap zstd
  # `supervise`'s tests run a real PyTorch training and the probe on the CPU (torch 1.13; about
  # 1.5 min to download and install, tests/external)
  python3-torch
)
list=false
windows=false
for option in "$@"; do
  case "$option" in
    # Debian 12's own ROCm (5.2) cannot compile for gfx11/gfx12: the hip-amd flavour is built
    # against ROCm 6.4 from Debian unstable, inside a chroot, never installed on the host.
    --hip) packages+=(debootstrap zstd) ;;
    --sanitize) packages+=(clang-15) ;;
    --windows)
      packages+=(g++-mingw-w64-x86-64-posix wine64 dpkg-dev nsis xdotool x11-apps netpbm)
      windows=true
      ;;
    --list) list=true ;;
    *)
      echo "install-deps: unknown option $option (--hip, --sanitize, --windows, --list)" >&2
      exit 2
      ;;
  esac
done
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
if $list; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  sudo="sudo"
fi

# apt-get source (scripts/mingw-deps.sh) needs the Sources index of the suites the host installs
# from: one deb-src entry beside debian.sources, written once.
src_list=/etc/apt/sources.list.d/lorascope-src.sources
need_update=false
if $windows && [[ ! -f $src_list ]]; then
  printf '%s\n' "Types: deb-src" "URIs: http://deb.debian.org/debian" \
    "Suites: bookworm bookworm-updates" "Components: main" \
    "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" | $sudo tee "$src_list" >/dev/null
  need_update=true
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  if $need_update; then
    $sudo apt-get update
  fi
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
