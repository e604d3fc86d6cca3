#!/usr/bin/env bash
# rocm-chroot.sh — a Debian unstable chroot with ROCm 6.4 (HIP 6.4.3, hipcc 7.0.2 on clang 21,
# hipBLAS/rocBLAS 6.4.4, rocm-smi 6.4.1, amd-smi), made with debootstrap, for building the hip-amd
# flavour on a Debian 12 host without installing anything from unstable on the host. Needs root,
# debootstrap and zstd (scripts/install-deps.sh --hip installs both).
#
#   scripts/rocm-chroot.sh ensure          the chroot's tarball in the cache, built when missing
#   scripts/rocm-chroot.sh tarball         prints the path of that tarball (present or not)
#   scripts/rocm-chroot.sh unpack DIR      ensure, then unpack it into DIR (replaced)
#   scripts/rocm-chroot.sh exec DIR CMD…   run CMD in the chroot at DIR, this checkout at /src
#   scripts/rocm-chroot.sh packages DIR    the pinned packages as installed in the chroot at DIR
#
# The packages and their versions are pinned in scripts/rocm-chroot.packages; the tarball's name
# carries a hash of that file and of `recipe` below (bump it when build() changes), so a change
# rebuilds it. A pinned version that
# the mirror no longer has fails the build naming the package and what the mirror offers now.
# rocBLAS's kernel library (4 GB of code objects a build never reads) is kept out by a dpkg
# path-exclude; librocblas.so itself stays (the linker resolves hipBLAS's references into it).
#
# Environment: LORASCOPE_CACHE (default /var/cache/lorascope, kept between CI runs),
# LORASCOPE_DEBIAN_MIRROR (default http://deb.debian.org/debian; a snapshot.debian.org URL of a
# date that had the pinned versions revives them after unstable moved on).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source_dir="$(cd "$here/.." && pwd)"
cache="${LORASCOPE_CACHE:-/var/cache/lorascope}"
mirror="${LORASCOPE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
package_list="$here/rocm-chroot.packages"
recipe=2  # the version of build(): part of the tarball's name
# rocBLAS's Tensile kernels: /usr/lib/<triplet>/rocblas/<version>/library/*.
rocblas_kernels='/usr/lib/x86_64-linux-gnu/rocblas/*/library/*'

die() {
  echo "rocm-chroot: $*" >&2
  exit 1
}

pinned() { grep -v '^\s*\(#\|$\|headers \)' "$package_list"; }
# "headers NAME=VERSION" lines: packages whose headers alone are unpacked (not installed: their
# dependencies cannot be, see rocm-chroot.packages).
headers_only() { sed -n 's/^headers \+//p' "$package_list"; }

tarball() {
  local hash
  hash="$( (cat "$package_list" && echo "recipe $recipe") | sha256sum | cut -c1-12)"
  echo "$cache/rocm-6.4-chroot-$hash.tar.zst"
}

# Names each pinned package whose version the mirror lacks, with what it offers instead.
explain_missing() {
  local root="$1" line name version offered found=0
  while IFS= read -r line; do
    name="${line%%=*}"
    version="${line#*=}"
    offered="$(chroot "$root" apt-cache madison "$name" 2>/dev/null | awk -F'|' '{gsub(/ /,"",$2); print $2}' | paste -sd' ')"
    if ! grep -qxF -- "$version" <<<"${offered// /$'\n'}"; then
      echo "rocm-chroot: $name $version is gone from $mirror (unstable offers: ${offered:-nothing})." >&2
      found=1
    fi
  done < <(pinned && headers_only)
  if [[ $found -eq 1 ]]; then
    echo "rocm-chroot: update scripts/rocm-chroot.packages to versions that exist, or set" \
      "LORASCOPE_DEBIAN_MIRROR to a snapshot.debian.org/archive/debian/<date> that has them." >&2
  fi
}

build() {
  local out="$1" staging
  command -v debootstrap >/dev/null || die "debootstrap is not installed (scripts/install-deps.sh --hip)"
  command -v zstd >/dev/null || die "zstd is not installed (scripts/install-deps.sh --hip)"
  staging="$(mktemp -d /var/tmp/lorascope-rocm-chroot.XXXXXX)"
  # shellcheck disable=SC2064
  trap "rm -rf '$staging'" EXIT
  echo "rocm-chroot: debootstrap sid from $mirror into $staging"
  debootstrap --variant=minbase sid "$staging/root" "$mirror" >"$staging/debootstrap.log" 2>&1 ||
    {
      tail -20 "$staging/debootstrap.log" >&2
      die "debootstrap failed (log above)"
    }
  local root="$staging/root"
  # A mirror that serves a frozen copy of unstable has a Release file past its Valid-Until.
  cat >"$root/etc/apt/apt.conf.d/90lorascope" <<'EOF'
Acquire::Check-Valid-Until "false";
APT::Install-Recommends "false";
APT::Install-Suggests "false";
EOF
  cat >"$root/etc/dpkg/dpkg.cfg.d/90lorascope-exclude" <<EOF
path-exclude=$rocblas_kernels
path-exclude=/usr/share/doc/*
path-exclude=/usr/share/man/*
path-exclude=/usr/share/locale/*
EOF
  chroot "$root" apt-get update -q >/dev/null
  mapfile -t packages < <(pinned)
  if ! chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]}" \
    >"$staging/install.log" 2>&1; then
    tail -20 "$staging/install.log" >&2
    explain_missing "$root"
    die "installing the pinned packages failed (apt's last lines above)"
  fi
  local spec
  for spec in $(headers_only); do
    if ! chroot "$root" bash -c "cd /tmp && apt-get download -q '$spec' && dpkg-deb -x ${spec%%=*}_*.deb /tmp/unpacked &&
        cp -r /tmp/unpacked/usr/include/. /usr/include/ && rm -rf /tmp/unpacked ${spec%%=*}_*.deb" \
      >>"$staging/install.log" 2>&1; then
      tail -20 "$staging/install.log" >&2
      explain_missing "$root"
      die "unpacking the headers of $spec failed (apt's last lines above)"
    fi
  done
  mkdir -p "$root/etc/lorascope"
  local names
  names="$(pinned | cut -d= -f1)"
  # shellcheck disable=SC2086
  chroot "$root" dpkg-query -W -f '${Package}=${Version}\n' $names >"$root/etc/lorascope/rocm-packages.txt"
  headers_only | sed 's/$/ (headers only)/' >>"$root/etc/lorascope/rocm-packages.txt"
  chroot "$root" apt-get clean
  rm -rf "$root"/var/lib/apt/lists/*
  if compgen -G "$root$rocblas_kernels" >/dev/null; then
    die "rocBLAS's kernel library was installed despite the path-exclude ($rocblas_kernels)"
  fi
  echo "rocm-chroot: $(du -sh "$root" | cut -f1) installed; packing into $out"
  mkdir -p "$cache"
  tar -C "$root" --numeric-owner -cf - . | zstd -q -T0 -3 -o "$out.partial"
  mv "$out.partial" "$out"
  rm -rf "$staging"
  trap - EXIT
}

ensure() {
  local out
  out="$(tarball)"
  if [[ -f "$out" ]]; then
    echo "rocm-chroot: cached $out"
    return
  fi
  # Tarballs of older package lists are of no further use.
  rm -f "$cache"/rocm-6.4-chroot-*.tar.zst "$cache"/rocm-6.4-chroot-*.partial
  build "$out"
}

unpack() {
  local dir="$1" out
  ensure
  out="$(tarball)"
  rm -rf "$dir"
  mkdir -p "$dir"
  zstd -q -d -c "$out" | tar -C "$dir" -xf -
  echo "rocm-chroot: unpacked into $dir"
}

# Runs in a private mount namespace, so the bind mounts vanish with the command.
run_in() {
  local dir="$1"
  shift
  [[ -x "$dir/usr/bin/hipcc" ]] || die "$dir holds no ROCm chroot (scripts/rocm-chroot.sh unpack $dir)"
  mkdir -p "$dir/src" "$dir/proc" "$dir/dev"
  unshare --mount --propagation private -- bash -c '
    set -e
    dir="$1"; src="$2"; shift 2
    mount --bind "$src" "$dir/src"
    mount -t proc proc "$dir/proc"
    mount --rbind /dev "$dir/dev"
    exec chroot "$dir" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
      bash -c "cd /src && \"\$@\"" bash "$@"' bash "$dir" "$source_dir" "$@"
}

case "${1:-}" in
  ensure) ensure ;;
  tarball) tarball ;;
  unpack) unpack "${2:?usage: rocm-chroot.sh unpack DIR}" ;;
  exec)
    dir="${2:?usage: rocm-chroot.sh exec DIR CMD...}"
    shift 2
    run_in "$dir" "$@"
    ;;
  packages) cat "${2:?usage: rocm-chroot.sh packages DIR}/etc/lorascope/rocm-packages.txt" ;;
  *)
    sed -n '2,14p' "$0" >&2
    exit 2
    ;;
esac
