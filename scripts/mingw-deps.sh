#!/usr/bin/env bash
# mingw-deps.sh — the third-party libraries of the Windows cross-build (preset mingw), built for
# x86_64-w64-mingw32 (posix threads) from Debian 12's source packages, as static libraries:
#   OpenBLAS   BLAS only, single precision (the trainer calls cblas_sgemm and nothing else), one
#              CPU target (HASWELL: AVX2 + FMA), no Fortran, no LAPACK
#   PCRE2      8-bit, with JIT
#   utf8proc
#   nlohmann_json  header-only: its headers and CMake package files
#
#   scripts/mingw-deps.sh [PREFIX]     installs them into PREFIX (default build/mingw-deps, where
#                                      cmake/MingwToolchain.cmake looks), from the cache when it
#                                      holds this build, else built and then cached
#   scripts/mingw-deps.sh --key        prints the cache key and exits
#
# The cache is /var/cache/lorascope/mingw-deps-KEY.tar.zst (LORASCOPE_CACHE overrides the
# folder); KEY hashes this script and the source versions apt resolves, so a Debian update or an
# edit here rebuilds. Needs scripts/install-deps.sh --windows (the compilers, dpkg-dev and the
# deb-src index apt-get source reads). About 6 minutes on 2 cores when nothing is cached.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cache_dir="${LORASCOPE_CACHE:-/var/cache/lorascope}"
sources=(openblas pcre2 utf8proc nlohmann-json3)
target=x86_64-w64-mingw32
openblas_target=HASWELL

fail() {
  echo "mingw-deps: $*" >&2
  exit 1
}

# The newest version of a source package in the deb-src index.
source_version() {
  apt-cache showsrc --only-source "$1" 2>/dev/null | awk '/^Version:/ { print $2 }' |
    sort -V | tail -n 1
}

versions=()
for s in "${sources[@]}"; do
  v="$(source_version "$s")"
  [[ -n $v ]] || fail "apt knows no source package '$s': run scripts/install-deps.sh --windows" \
    "(it adds the deb-src index)"
  versions+=("$s=$v")
done
key="$( (cat "$0"; printf '%s\n' "${versions[@]}") | sha256sum | cut -c1-16)"
if [[ ${1:-} == --key ]]; then
  echo "$key"
  exit 0
fi
prefix="${1:-$root/build/mingw-deps}"
tarball="$cache_dir/mingw-deps-$key.tar.zst"

if [[ -f $prefix/.key && $(cat "$prefix/.key") == "$key" ]]; then
  echo "mingw-deps: $prefix holds build $key (${versions[*]})"
  exit 0
fi
if [[ -f $tarball ]]; then
  rm -rf "$prefix"
  mkdir -p "$prefix"
  tar -C "$prefix" -I zstd -xf "$tarball"
  echo "mingw-deps: unpacked $tarball into $prefix"
  exit 0
fi

for tool in "$target-gcc-posix" "$target-g++-posix" dpkg-source cmake ninja zstd; do
  command -v "$tool" >/dev/null || fail "$tool is missing: run scripts/install-deps.sh --windows"
done
jobs="$(nproc)"
work="$(mktemp -d "${TMPDIR:-/var/tmp}/lorascope-mingw-deps.XXXXXX")"
trap 'rm -rf "$work"' EXIT
stage="$work/prefix"
mkdir -p "$stage"
cd "$work"
echo "mingw-deps: building ${versions[*]} for $target into $prefix (key $key)"
apt-get source -qq "${versions[@]}" >apt-source.log 2>&1 || {
  cat apt-source.log
  fail "apt-get source failed (log above)"
}
srcdir() { find "$work" -maxdepth 1 -type d -name "$1-*" | head -n 1; }

toolchain="$root/cmake/MingwToolchain.cmake"
cmake_build() {  # cmake_build SRC [options...]: configure, build and install into the stage
  local src=$1
  shift
  cmake -S "$src" -B "$src/build-mingw" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
    -DLORASCOPE_MINGW_DEPS="$stage" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$stage" \
    -DBUILD_SHARED_LIBS=OFF "$@" >"$src.configure.log" 2>&1 ||
    { cat "$src.configure.log"; fail "configuring $src failed (log above)"; }
  cmake --build "$src/build-mingw" --parallel "$jobs" --target install >"$src.build.log" 2>&1 ||
    { tail -n 40 "$src.build.log"; fail "building $src failed (log above)"; }
}

start=$SECONDS
cmake_build "$(srcdir nlohmann-json3)" -DJSON_BuildTests=OFF -DJSON_Install=ON
cmake_build "$(srcdir utf8proc)" -DUTF8PROC_ENABLE_TESTING=OFF
cmake_build "$(srcdir pcre2)" -DPCRE2_BUILD_PCRE2_8=ON -DPCRE2_BUILD_PCRE2_16=OFF \
  -DPCRE2_BUILD_PCRE2_32=OFF -DPCRE2_SUPPORT_JIT=ON -DPCRE2_BUILD_PCRE2GREP=OFF \
  -DPCRE2_BUILD_TESTS=OFF -DPCRE2_SUPPORT_LIBBZ2=OFF -DPCRE2_SUPPORT_LIBZ=OFF \
  -DPCRE2_SUPPORT_LIBEDIT=OFF -DPCRE2_SUPPORT_LIBREADLINE=OFF
echo "mingw-deps: nlohmann_json, utf8proc, PCRE2 after $((SECONDS - start)) s"

# OpenBLAS by its own Makefile: HOSTCC builds the generators that run here; NUM_THREADS is the
# most threads the library will use (the build machine's core count otherwise). NO_AVX2 is set
# empty because 0.3.21's c_check probes AVX2 with an asm line no GCC assembles (`%%ymm0` in basic
# asm) and would otherwise build the HASWELL target without -mavx2.
openblas="$(srcdir openblas)"
make -C "$openblas" -j "$jobs" libs \
  CC="$target-gcc-posix" AR="$target-ar" RANLIB="$target-ranlib" HOSTCC=gcc \
  BINARY=64 TARGET="$openblas_target" DYNAMIC_ARCH=0 NOFORTRAN=1 NO_LAPACK=1 NO_LAPACKE=1 \
  NO_AVX2= BUILD_SINGLE=1 NO_SHARED=1 USE_THREAD=1 NUM_THREADS=64 >"$openblas.build.log" 2>&1 ||
  { tail -n 40 "$openblas.build.log"; fail "building OpenBLAS failed (log above)"; }
make -C "$openblas" install PREFIX="$stage" NO_SHARED=1 NO_LAPACK=1 NO_LAPACKE=1 NOFORTRAN=1 \
  TARGET="$openblas_target" BINARY=64 >"$openblas.install.log" 2>&1 ||
  { tail -n 40 "$openblas.install.log"; fail "installing OpenBLAS failed (log above)"; }
echo "mingw-deps: OpenBLAS ($openblas_target) after $((SECONDS - start)) s"

printf '%s\n' "${versions[@]}" >"$stage/VERSIONS"
echo "$key" >"$stage/.key"
mkdir -p "$cache_dir"
tar -C "$stage" -I zstd -cf "$tarball.part" .
mv "$tarball.part" "$tarball"
rm -rf "$prefix"
mkdir -p "$(dirname "$prefix")"
cp -a "$stage" "$prefix"
echo "mingw-deps: built in $((SECONDS - start)) s, cached as $tarball"
