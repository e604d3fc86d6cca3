# xvfb-lib.sh — sourced by scripts/check-windows-gui.sh and scripts/check-windows-installer.sh.
# start_xvfb LOG: starts Xvfb (1400x900, 24 bits) on the first free display from :90 up, its
# output into LOG; sets xvfb_pid and exports DISPLAY once the server's socket exists. Returns 1
# when no display could be started.
start_xvfb() {
  local log=$1 n
  for n in $(seq 90 170); do
    [[ -e /tmp/.X11-unix/X$n || -e /tmp/.X$n-lock ]] && continue
    # -noreset: no server reset when the last client leaves (a client connecting then fails).
    Xvfb ":$n" -screen 0 1400x900x24 -nolisten tcp -noreset >"$log" 2>&1 &
    xvfb_pid=$!
    for _ in $(seq 100); do
      if [[ -e /tmp/.X11-unix/X$n ]]; then
        export DISPLAY=":$n"
        return 0
      fi
      kill -0 "$xvfb_pid" 2>/dev/null || break  # another took :$n first: the next one
      sleep 0.2
    done
  done
  return 1
}
