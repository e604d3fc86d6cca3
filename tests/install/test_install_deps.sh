#!/usr/bin/env bash
# test_install_deps.sh SCRIPT — scripts/install-deps.sh is idempotent: on a machine missing every
# package it runs `apt-get update` once and installs them all; run again it runs no apt-get at
# all. dpkg-query, apt-get and sudo are stand-ins on PATH that keep the "installed" set in a file,
# so nothing is installed here. Every name it installs is a package of Debian 12 (apt-cache, from
# the local package lists; that part is skipped, saying so, where the lists are empty).
set -euo pipefail
script=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
installed=$work/installed
calls=$work/apt-calls
touch "$installed" "$calls"
cat >"$work/bin/dpkg-query" <<SHIM
#!/bin/sh
# dpkg-query -W -f='\${Status}' NAME
for last; do :; done
grep -qx "\$last" "$installed" && printf 'install ok installed'
exit 0
SHIM
cat >"$work/bin/apt-get" <<SHIM
#!/bin/sh
echo "apt-get \$*" >>"$calls"
if [ "\$1" = install ]; then
  for arg; do case \$arg in -*|install) ;; *) echo "\$arg" >>"$installed" ;; esac; done
fi
SHIM
printf '#!/bin/sh\nexec "$@"\n' >"$work/bin/sudo"
chmod +x "$work/bin/"*

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
for flags in "" "--hip"; do
  : >"$installed"
  : >"$calls"
  # shellcheck disable=SC2086
  mapfile -t wanted < <("$script" --list $flags)
  # shellcheck disable=SC2086
  PATH="$work/bin:$PATH" "$script" $flags >/dev/null
  [[ $(grep -c '^apt-get update' "$calls") -eq 1 ]] || fail "first run ($flags): not one apt-get update"
  for p in "${wanted[@]}"; do
    grep -qx "$p" "$installed" || fail "first run ($flags): $p not installed"
  done
  : >"$calls"
  # shellcheck disable=SC2086
  PATH="$work/bin:$PATH" "$script" $flags >/dev/null
  [[ ! -s $calls ]] || fail "second run ($flags) ran: $(tr '\n' ';' <"$calls")"
  echo "ok ($flags): ${#wanted[@]} packages; the second run ran no apt-get"
done

if apt-cache show --no-all-versions bash >/dev/null 2>&1; then
  # One apt-cache call: it prints a record for each real package and nothing for other names.
  mapfile -t names < <("$script" --list --hip)
  known=$(apt-cache show --no-all-versions "${names[@]}" 2>/dev/null | sed -n 's/^Package: //p')
  unknown=0
  for p in "${names[@]}"; do
    grep -qx "$p" <<<"$known" || { fail "$p is not a Debian package" && unknown=1; }
  done
  ((unknown)) || echo "ok: each of the ${#names[@]} names is a package apt knows"
else
  echo "SKIPPED: the package-name check (apt has no package lists here)"
fi
exit $((failures > 0))
