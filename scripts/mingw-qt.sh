#!/usr/bin/env bash
# mingw-qt.sh — Qt 6 for the Windows cross-build's GUI (preset mingw): the host's Qt version
# (6.4.2 on Debian 12) built for x86_64-w64-mingw32 as DLLs, with the host's moc, rcc and uic
# (QT_HOST_PATH=/usr, Debian's qt6-base-dev-tools):
#   qtbase   Core, Gui, Widgets, Test; the platform plugins windows and minimal (offscreen needs
#            FreeType on Windows: the tests use windows, on Xvfb); the windowsvista style. No SQL,
#            network, D-Bus, OpenGL, Vulkan, print support, XML, concurrent, ICU or zstd; PNG only
#            among the image formats; text through DirectWrite (no FreeType). Its bundled zlib,
#            libpng, PCRE2, HarfBuzz and double-conversion.
#   qtcharts line charts and value axes (what widgets/ draws), no OpenGL.
# Every DLL and plugin links libgcc, libstdc++ and winpthread statically (-static at link time),
# so the deployed folder needs no compiler runtime. Compiled with -Os (Qt's optimize_size), which
# costs fewer CPU minutes than Qt's default -O3 for Core and Gui.
#
#   scripts/mingw-qt.sh [PREFIX]     installs Qt into PREFIX (default build/mingw-qt, where
#                                    cmake/MingwToolchain.cmake looks), from the cache when it
#                                    holds this build, else built and then cached
#   scripts/mingw-qt.sh --key        prints the cache key and exits
#   scripts/mingw-qt.sh --cached     exits 0 when PREFIX or the cache holds this build
#
# Sources:
#   qt6-base   Debian's source package of the host's Qt (apt-get source qt6-base=VERSION, with
#              Debian's patches; VERSION is that of the installed qt6-base-dev).
#   qt6-charts Debian's source package of the same version when the mirror serves it; the mirror
#              this machine reaches answers 404 for qt6-charts_6.4.2.orig.tar.xz (and for
#              qt6-svg's and qt6-tools' tarballs), so the script then takes upstream's v6.4.2 tag
#              (commit 445119bc19232067452594cfca454175b9ac1a83) as `git archive` exports it,
#              from CACHE/qtcharts-6.4.2-src.tar.zst, checked file by file against the manifest
#              hash below. To make that file on a machine that can reach upstream:
#                git clone https://code.qt.io/qt/qtcharts.git && cd qtcharts &&
#                git archive --prefix=qtcharts-6.4.2/ v6.4.2 | zstd -19 -o qtcharts-6.4.2-src.tar.zst
# The cache is CACHE/mingw-qt-KEY.tar.zst, CACHE being /var/cache/lorascope (LORASCOPE_CACHE
# overrides it); KEY hashes the configure options below, the compiler's version and the sources'
# versions, so a Debian update or a changed option rebuilds (an edit to a comment does not: the
# build takes hours of a loaded 2-core machine). The prefix also holds what the
# installer ships beside Qt's DLLs: share/qt6-licenses/ (Qt's LGPL-3.0 and GPL texts, from the
# sources) and SOURCES.txt (where the sources came from). Needs scripts/install-deps.sh --windows.
# Measured from nothing: see README, "Windows" (CPU minutes, user + sys, /usr/bin/time -v).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cache_dir="${LORASCOPE_CACHE:-/var/cache/lorascope}"
target=x86_64-w64-mingw32
toolchain="$root/cmake/MingwToolchain.cmake"
charts_tag=v6.4.2
charts_commit=445119bc19232067452594cfca454175b9ac1a83
charts_tarball="$cache_dir/qtcharts-6.4.2-src.tar.zst"
# sha256 of `sha256sum` over every file of the export, sorted by path (manifest() below).
charts_manifest=c11de9a51a523222562a14c86225cfcbbf3c35a8cb97abb7d4afef1e1f03ca18

fail() {
  echo "mingw-qt: $*" >&2
  exit 1
}
manifest() { (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum |
  sha256sum | cut -c1-64); }

# The host's Qt, whose tools build this one: both must be the same version.
base_version="$(dpkg-query -W -f='${source:Version}' qt6-base-dev 2>/dev/null || true)"
[[ -n $base_version ]] || fail "qt6-base-dev is not installed: run scripts/install-deps.sh"
qt_version="${base_version%%+*}"
qt_version="${qt_version%%-*}"
charts_version="$(apt-cache showsrc --only-source qt6-charts 2>/dev/null |
  awk -v v="$qt_version" '/^Version:/ && index($2, v "-") == 1 { print $2 }' | sort -V | tail -n 1)"
apt-cache showsrc --only-source qt6-base 2>/dev/null | grep -qx "Version: $base_version" ||
  fail "apt knows no source package qt6-base $base_version: run scripts/install-deps.sh --windows" \
    "(it adds the deb-src index)"
compiler="$("$target-g++-posix" --version 2>/dev/null | head -n 1 || true)"
sources="qt6-base=$base_version qt6-charts=${charts_version:-none} charts-fallback=$charts_tag"

# Both modules: DLLs, -Os, no examples or tests, the runtime linked in.
common_options=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DQT_BUILD_EXAMPLES=OFF
  -DQT_BUILD_TESTS=OFF -DQT_BUILD_BENCHMARKS=OFF -DCMAKE_SHARED_LINKER_FLAGS=-static
  -DCMAKE_MODULE_LINKER_FLAGS=-static -DFEATURE_optimize_size=ON)
# Debian's source has no src/3rdparty/wintab (its licence forbids changes): no tablet events.
base_options=(-DFEATURE_sql=OFF -DFEATURE_network=OFF -DFEATURE_dbus=OFF -DFEATURE_opengl=OFF
  -DINPUT_opengl=no -DFEATURE_vulkan=OFF -DFEATURE_printsupport=OFF -DFEATURE_concurrent=OFF
  -DFEATURE_xml=OFF -DFEATURE_zstd=OFF -DFEATURE_icu=OFF -DFEATURE_tabletevent=OFF
  -DFEATURE_direct2d=OFF -DFEATURE_androiddeployqt=OFF -DFEATURE_pkg_config=OFF
  -DFEATURE_jpeg=OFF -DFEATURE_gif=OFF -DFEATURE_ico=OFF -DFEATURE_freetype=OFF
  -DFEATURE_system_zlib=OFF -DFEATURE_system_pcre2=OFF -DFEATURE_system_png=OFF
  -DFEATURE_system_jpeg=OFF -DFEATURE_system_freetype=OFF -DFEATURE_system_harfbuzz=OFF
  -DFEATURE_system_doubleconversion=OFF)
charts_options=(-DFEATURE_charts_spline_chart=OFF -DFEATURE_charts_area_chart=OFF
  -DFEATURE_charts_scatter_chart=OFF -DFEATURE_charts_bar_chart=OFF
  -DFEATURE_charts_pie_chart=OFF -DFEATURE_charts_boxplot_chart=OFF
  -DFEATURE_charts_candlestick_chart=OFF -DFEATURE_charts_datetime_axis=OFF)
key="$(printf '%s\n' "$compiler" "$sources" "${common_options[@]}" "${base_options[@]}" \
  "${charts_options[@]}" | sha256sum | cut -c1-16)"
if [[ ${1:-} == --key ]]; then
  echo "$key"
  exit 0
fi
tarball="$cache_dir/mingw-qt-$key.tar.zst"
if [[ ${1:-} == --cached ]]; then
  prefix="${2:-$root/build/mingw-qt}"
  [[ -f $tarball || (-f $prefix/.key && $(cat "$prefix/.key") == "$key") ]]
  exit
fi
prefix="${1:-$root/build/mingw-qt}"

if [[ -f $prefix/.key && $(cat "$prefix/.key") == "$key" ]]; then
  echo "mingw-qt: $prefix holds build $key ($sources)"
  exit 0
fi
if [[ -f $tarball ]]; then
  rm -rf "$prefix"
  mkdir -p "$prefix"
  tar -C "$prefix" -I zstd -xf "$tarball"
  echo "mingw-qt: unpacked $tarball into $prefix"
  exit 0
fi

for tool in "$target-gcc-posix" "$target-g++-posix" dpkg-source cmake ninja zstd; do
  command -v "$tool" >/dev/null || fail "$tool is missing: run scripts/install-deps.sh --windows"
done
[[ -x /usr/lib/qt6/libexec/moc ]] || fail "the host's moc is missing (qt6-base-dev-tools)"
jobs="$(nproc)"
# The build folder is kept until the build succeeds: a build stopped part-way (CI stops one that
# has not finished when its windows section begins) goes on from where it stopped next time.
work="${TMPDIR:-/var/tmp}/lorascope-mingw-qt-$key"
# One build at a time in that folder: a second caller waits, then unpacks what the first cached.
exec 9>"$work.lock"
if ! flock -n 9; then
  echo "mingw-qt: another scripts/mingw-qt.sh is building $key; waiting for it"
  flock 9
fi
if [[ -f $tarball ]]; then
  exec "$0" "$prefix"
fi
stage="$work/prefix"
mkdir -p "$stage"
cd "$work"
echo "mingw-qt: building Qt $qt_version ($sources) for $target into $prefix (key $key;" \
  "work folder $work$([[ -f $work/.sources ]] && echo ', resumed'))"
start=$SECONDS

if [[ ! -f .sources ]]; then
  rm -rf qt6-base-* qt6-charts-* charts-upstream
  apt-get source -qq "qt6-base=$base_version" >apt-source-base.log 2>&1 ||
    { cat apt-source-base.log; fail "apt-get source qt6-base=$base_version failed (log above)"; }
fi
base_src="$(find "$work" -maxdepth 1 -name 'qt6-base-*' | head -n 1)"  # the files are qt6-base_*
charts_src=""
charts_origin=""
if [[ -f .sources ]]; then
  charts_src="$(sed -n 1p .sources)"
  charts_origin="$(sed -n 2p .sources)"
elif [[ -n $charts_version ]] &&
  apt-get source -qq "qt6-charts=$charts_version" >apt-source-charts.log 2>&1; then
  charts_src="$(find "$work" -maxdepth 1 -type d -name 'qt6-charts-*' | head -n 1)"
  charts_origin="Debian's source package qt6-charts $charts_version (apt-get source)"
else
  echo "mingw-qt: Debian's mirror does not serve qt6-charts ${charts_version:-$qt_version}:" \
    "$(grep -m1 -o '404.*' apt-source-charts.log 2>/dev/null || echo 'no such source package')"
  [[ -f $charts_tarball ]] || fail "no Qt Charts source: neither Debian's mirror nor" \
    "$charts_tarball (upstream's $charts_tag, made as the header of this script says)"
  mkdir charts-upstream
  tar -C charts-upstream -I zstd -xf "$charts_tarball"
  charts_src="$work/charts-upstream/qtcharts-$qt_version"
  [[ -d $charts_src ]] || fail "$charts_tarball holds no qtcharts-$qt_version/ folder"
  got="$(manifest "$charts_src")"
  [[ $got == "$charts_manifest" ]] || fail "$charts_tarball is not upstream's $charts_tag" \
    "(manifest $got, expected $charts_manifest)"
  charts_origin="upstream's Qt Charts $charts_tag (commit $charts_commit, code.qt.io/qt/qtcharts),"
  charts_origin+=" git archive, manifest sha256 $charts_manifest"
fi
[[ -d $base_src && -d $charts_src ]] || fail "the sources in $work are incomplete: remove it"
printf '%s\n' "$charts_src" "$charts_origin" >.sources
echo "mingw-qt: sources ready after $((SECONDS - start)) s"

# The mingw toolchain of the project, with the stage as its library prefix: Qt Charts finds the
# staged qtbase there.
# A copy of the toolchain file in the work folder: the build, resumed from another checkout, keeps
# the one it was configured with.
[[ -f toolchain.cmake ]] || cp "$toolchain" toolchain.cmake
qt_cmake() {  # qt_cmake NAME SRC [options...]: configure, build and install into the stage
  local name=$1 src=$2
  shift 2
  [[ -f $work/$name.installed ]] && return
  if [[ ! -f $work/$name.configured ]]; then
    rm -rf "$work/build-$name"
    cmake -S "$src" -B "$work/build-$name" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$work/toolchain.cmake" \
      -DLORASCOPE_MINGW_DEPS="$stage" -DLORASCOPE_MINGW_QT="$stage" \
      -DQT_HOST_PATH=/usr -DQT_HOST_PATH_CMAKE_DIR=/usr/lib/x86_64-linux-gnu/cmake \
      -DCMAKE_INSTALL_PREFIX="$stage" "${common_options[@]}" "$@" >"$work/$name.configure.log" 2>&1 ||
      { tail -n 60 "$work/$name.configure.log"; fail "configuring $name failed (log above)"; }
    touch "$work/$name.configured"
  fi
  # A failed build is configured afresh next time (a resumed one may have lost its inputs).
  cmake --build "$work/build-$name" --parallel "$jobs" >"$work/$name.build.log" 2>&1 ||
    { grep -B2 -A20 -m3 'error:' "$work/$name.build.log" || tail -n 60 "$work/$name.build.log"
      rm -f "$work/$name.configured"
      fail "building $name failed (log above; the next run configures it afresh)"; }
  cmake --install "$work/build-$name" >"$work/$name.install.log" 2>&1 ||
    { tail -n 40 "$work/$name.install.log"; fail "installing $name failed (log above)"; }
  touch "$work/$name.installed"
  echo "mingw-qt: $name built and staged after $((SECONDS - start)) s"
}

qt_cmake qtbase "$base_src" "${base_options[@]}"
qt_cmake qtcharts "$charts_src" "${charts_options[@]}"

# What the installer carries beside the DLLs: the licences and where the sources came from.
mkdir -p "$stage/share/qt6-licenses"
cp "$base_src"/LICENSES/{LGPL-3.0-only,GPL-2.0-only,GPL-3.0-only,Qt-GPL-exception-1.0}.txt \
  "$stage/share/qt6-licenses/"
cat >"$stage/SOURCES.txt" <<EOF
Qt $qt_version for Windows (x86_64-w64-mingw32), built by LoRAscope's scripts/mingw-qt.sh
(cache key $key) with $compiler.

Qt is licensed under the GNU Lesser General Public License version 3 (LGPL-3.0-only, in
share/qt6-licenses/ beside this file, with the GPL texts it refers to). These DLLs are built,
unmodified but for the patches of Debian's package, from:
  qtbase     Debian's source package qt6-base $base_version
             (https://deb.debian.org/debian/pool/main/q/qt6-base/: the .dsc, the .orig.tar.xz
             and the .debian.tar.xz; \`apt-get source qt6-base=$base_version\` on Debian 12)
  qtcharts   $charts_origin
The build's options are those of scripts/mingw-qt.sh in LoRAscope's source repository
(${LORASCOPE_REPOSITORY_URL:-https://github.com/lorascope/lorascope}); rebuilding it there and
replacing these DLLs with your own build of the same Qt version is what the LGPL allows you to do.
EOF
printf '%s\n' "$sources" >"$stage/VERSIONS"
echo "$key" >"$stage/.key"
mkdir -p "$cache_dir"
tar -C "$stage" -I zstd -cf "$tarball.part" .
mv "$tarball.part" "$tarball"
rm -rf "$prefix"
mkdir -p "$prefix"
cp -a "$stage/." "$prefix/"
cd /
rm -rf "$work" "$work.lock"
echo "mingw-qt: built in $((SECONDS - start)) s, cached as $tarball"
