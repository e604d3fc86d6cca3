#!/usr/bin/env bash
# check-deb.sh — the Debian package, installed, used and removed as a user would, in a clean
# Debian 12 chroot:
#   1. cpack builds lorascope_<version>_amd64.deb from an existing cpu build (BUILD_DIR, default
#      build/cpu; the two programs and the man pages are brought up to date first);
#   2. a Debian 12 (bookworm) minbase chroot made by debootstrap, holding only this check's own
#      tools (Xvfb, xwininfo, xwd, netpbm), is unpacked from /var/cache/lorascope/ (LORASCOPE_CACHE
#      overrides it, as for .ci/run's other caches; made there first when missing: ~2 minutes);
#   3. apt installs the .deb without its Recommends (so the Depends dpkg-shlibdeps computed must
#      suffice), resolving them from Debian's archive (downloaded packages are kept in
#      the cache's apt-archives/ for the next run);
#   4. from the installed paths: lorascope-train --version, train --demo --steps 5, doctor (when
#      the program has that command), the man pages, the bash completion; the GUI under Xvfb —
#      its window is mapped, it started its engine (/usr/bin/lorascope-train engine) — and a
#      screenshot of the screen is saved as BUILD_DIR/check-deb/installed-window.png;
#   5. apt purges the package and the dependencies it brought in, and the chroot's file list is
#      compared with the one taken before the install: nothing may be left behind.
# Needs root (debootstrap, chroot, mounts) and Debian's archive on the network.
# usage: scripts/check-deb.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build/cpu}")
cache="${LORASCOPE_CACHE:-/var/cache/lorascope}"
tarball=$cache/debian12-chroot.tar.zst
apt_archives=$cache/apt-archives
out=$build/check-deb
tools=xvfb,xauth,x11-apps,x11-utils,netpbm
display=:77

step() { printf '\n=== [%3ds] %s ===\n' "$SECONDS" "$*"; }
fail() {
  echo "check-deb: FAILED: $*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || fail "needs root (debootstrap, chroot, mounts): sudo $0 $*"
[[ -f $build/CPackConfig.cmake ]] || fail "$build is not a configured build (cmake --preset cpu)"

step "1. the .deb from $build"
cmake --build "$build" --target lorascope lorascope-train lorascope_man --parallel "$(nproc)"
rm -rf "$out" && mkdir -p "$out"
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$out/package" >"$out/cpack.log" ||
  fail "cpack: see $out/cpack.log"
deb=$(ls "$out"/package/lorascope_*.deb)
dpkg-deb --field "$deb" Package Version Depends

step "2. the Debian 12 chroot"
if [[ ! -s $tarball ]]; then
  echo "check-deb: $tarball is missing: debootstrap makes it (minbase + $tools)"
  mkdir -p "$cache"
  fresh=$(mktemp -d "$cache/debootstrap.XXXXXX")
  debootstrap --variant=minbase --include="$tools" bookworm "$fresh" http://deb.debian.org/debian \
    >"$out/debootstrap.log" || fail "debootstrap: see $out/debootstrap.log"
  rm -f "$fresh"/var/cache/apt/archives/*.deb
  tar -C "$fresh" --zstd -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
  rm -rf "$fresh"
fi
root=$(mktemp -d /tmp/lorascope-chroot.XXXXXX)
gui_pid=""
xvfb_pid=""
cleanup() {
  for pid in $gui_pid $xvfb_pid; do
    kill "$pid" 2>/dev/null || true
  done
  sleep 0.5
  for mount in var/cache/apt/archives dev/pts dev proc; do
    if mountpoint -q "$root/$mount"; then umount -l "$root/$mount" || true; fi
  done
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT
tar -C "$root" --zstd -xf "$tarball"
mkdir -p "$apt_archives/partial"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount --bind "$apt_archives" "$root/var/cache/apt/archives"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A command in the chroot; `exec` so that a background one's $! is the program's own pid.
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp/home \
  LANG=C.UTF-8 XDG_RUNTIME_DIR=/tmp/xdg "$@"; }
in_root_background() { (exec chroot "$root" env -i PATH=/usr/bin:/bin HOME=/tmp/home \
  LANG=C.UTF-8 XDG_RUNTIME_DIR=/tmp/xdg "$@") & }
# Everything a package may own; apt's and dpkg's own records, caches and logs excluded.
list_files() {
  (cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./tmp \
    -o -path ./run -o -path ./root -o -path ./var/cache -o -path ./var/lib/apt \
    -o -path ./var/lib/dpkg -o -path ./var/log \) -prune -o -print | sort)
}
list_files >"$out/files-before.txt"

step "3. apt installs the .deb (dependencies from Debian's archive)"
cp "$deb" "$root/tmp/"
# apt's download sandbox user cannot write the bind-mounted archive cache; root downloads.
apt_get() { in_root env DEBIAN_FRONTEND=noninteractive apt-get -o APT::Sandbox::User=root "$@"; }
apt_get update -qq
# Without Recommends: the Depends that dpkg-shlibdeps computed must be enough on their own.
apt_get install -y -q --no-install-recommends \
  "/tmp/$(basename "$deb")" \
  >"$out/apt-install.log" || fail "apt-get install: see $out/apt-install.log"
grep -E "^(Setting up|The following NEW)" "$out/apt-install.log" | tail -n 3
in_root dpkg -L lorascope >"$out/package-files.txt"

step "4. the installed programs"
in_root mkdir -p /tmp/home /tmp/work /tmp/xdg
in_root chmod 700 /tmp/xdg
in_root lorascope-train --version
in_root sh -c 'cd /tmp/work && lorascope-train train --demo --steps 5 --out /tmp/work/demo-run' |
  tee "$out/train.log"
grep -q "^done: 5 steps" "$out/train.log" || fail "train --demo --steps 5 did not finish its 5 steps"
[[ -s $root/tmp/work/demo-run/adapter/adapter_model.safetensors ]] ||
  fail "the demo run wrote no adapter"
in_root lorascope-train doctor | tee "$out/doctor.log"
for page in lorascope lorascope-train; do
  [[ -s $root/usr/share/man/man1/$page.1 || -s $root/usr/share/man/man1/$page.1.gz ]] ||
    fail "man page $page(1) is not installed"
done
completion=$(in_root bash -c 'source /usr/share/bash-completion/completions/lorascope-train &&
  COMP_WORDS=(lorascope-train train --dev) COMP_CWORD=2 && _lorascope_train &&
  echo "${COMPREPLY[*]}"')
[[ $completion == "--device" ]] || fail "bash completion of 'train --dev' gave '$completion'"
echo "man pages and bash completion: installed and working"

echo "the GUI under Xvfb:"
# -noreset: an X server resets when its last client leaves, and a connection made during the
# reset fails; the probe below is such a client (the GUI once failed "could not connect to
# display" right after the probe had succeeded).
in_root_background Xvfb "$display" -screen 0 1400x900x24 -nolisten tcp -noreset >"$out/xvfb.log" 2>&1
xvfb_pid=$!
# Xvfb takes its time on a busy machine (its first start in a new chroot compiles the keymap):
# the GUI, which aborts without a display, starts once the server answers (a run from nothing
# failed here after a fixed 1 s wait).
for _ in $(seq 60); do
  in_root xwininfo -display "$display" -root >/dev/null 2>&1 && break
  sleep 0.5
done
in_root xwininfo -display "$display" -root >/dev/null 2>&1 ||
  fail "Xvfb did not answer on $display after 30 s (see $out/xvfb.log)"
in_root_background DISPLAY="$display" /usr/bin/lorascope >"$out/gui.log" 2>&1
gui_pid=$!
window=""
for _ in $(seq 60); do
  window=$(in_root xwininfo -display "$display" -root -tree 2>/dev/null |
    grep '"LoRAscope": ("lorascope"' | grep -v ' 1x1+' || true)
  [[ -n $window ]] && break
  sleep 0.5
done
[[ -n $window ]] || fail "no LoRAscope window after 30 s (see $out/gui.log)"
echo "  window: $(head -n 1 <<<"$window" | sed 's/^ *//')"
engine=""
for _ in $(seq 20); do
  for stat in "$root"/proc/[0-9]*/cmdline; do
    cmdline=$(tr '\0' ' ' 2>/dev/null <"$stat" || true)  # a process may be gone by now
    if [[ $cmdline == "/usr/bin/lorascope-train engine "* ]]; then
      engine=$cmdline
      break 2
    fi
  done
  sleep 0.5
done
[[ -n $engine ]] || fail "the installed GUI did not start /usr/bin/lorascope-train engine"
echo "  engine: $engine"
sleep 3  # the engine's hello and the demo's inspection reach the window
in_root sh -c "xwd -display $display -root -silent | xwdtopnm 2>/dev/null | pnmtopng" \
  >"$out/installed-window.png"
[[ -s $out/installed-window.png ]] || fail "no screenshot"
echo "  screenshot: $out/installed-window.png"
# The window closes (SIGTERM); its engine, whose stdin then ends, exits too.
kill "$gui_pid"
wait "$gui_pid" 2>/dev/null || true
gui_pid=""
ours() { grep -lsa "^/usr/bin/lorascope" "$root"/proc/[0-9]*/cmdline || true; }
for _ in $(seq 20); do
  [[ -z $(ours) ]] && break
  sleep 0.5
done
[[ -z $(ours) ]] || fail "a lorascope process still runs 10 s after the GUI was closed: $(ours)"
echo "  closed: no lorascope process left"
kill "$xvfb_pid" 2>/dev/null || true
wait "$xvfb_pid" 2>/dev/null || true
xvfb_pid=""

step "5. apt removes it; nothing may be left behind"
apt_get purge -y -q --autoremove lorascope \
  >"$out/apt-purge.log" || fail "apt-get purge: see $out/apt-purge.log"
grep -m 1 -E "^Purging|^Removing" "$out/apt-purge.log"
rm -f "$root/tmp/$(basename "$deb")"
list_files >"$out/files-after.txt"
if ! diff "$out/files-before.txt" "$out/files-after.txt" >"$out/files-left.diff"; then
  cat "$out/files-left.diff"
  fail "the chroot's files differ after the purge (above: < gone, > left behind)"
fi
echo "nothing left behind ($(wc -l <"$out/files-before.txt") paths compared)"
step "check-deb passed"
