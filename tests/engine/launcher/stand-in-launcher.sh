#!/usr/bin/env bash
# stand-in-launcher.sh WORKDIR HOST_PREFIX PROGRAM [ARGS...] — the Linux stand-in for
# `wsl.exe -d DISTRO -- lorascope-train engine` (profiles' engine.launcher): runs PROGRAM in
# another working directory with its stdin passed through line by line, and refuses any line that
# names a path of the host side (HOST_PREFIX): such a line means a path crossed untranslated, as a
# C:\ path would reach an engine inside WSL. Then it says so on stderr, ends the engine and exits
# with status 3. The engine's stdout and stderr are this script's.
set -u
workdir=$1
host_prefix=$2
shift 2
cd "$workdir" || exit 2
fifo="$(mktemp -u)"
mkfifo "$fifo"
"$@" <"$fifo" &
engine=$!
exec 3>"$fifo"
rm -f "$fifo"
while IFS= read -r line; do
  if [[ "$line" == *"$host_prefix"* ]]; then
    echo "stand-in launcher: a path of the host side reached the engine: $line" >&2
    kill "$engine" 2>/dev/null
    wait "$engine"
    exit 3
  fi
  printf '%s\n' "$line" >&3
done
exec 3>&-
wait "$engine"
