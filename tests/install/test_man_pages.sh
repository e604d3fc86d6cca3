#!/usr/bin/env bash
# test_man_pages.sh MAN_DIR LORASCOPE_TRAIN — the man pages help2man made at build time: each is a
# section-1 page of its program, lorascope-train.1 names every command and option that
# `lorascope-train --help` prints, and each command with a --help of its own has its own page.
set -euo pipefail
man_dir=$1
exe=$2
page=$man_dir/lorascope-train.1
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

[[ -s $page ]] || { echo "FAIL: $page is missing or empty"; exit 1; }
grep -q '^\.TH LORASCOPE-TRAIN "1"' "$page" || fail "$page has no '.TH LORASCOPE-TRAIN \"1\"' header"
# help2man escapes '-' as '\-' in roff; undo it to compare with --help.
text=$(sed 's/\\-/-/g' "$page")
help=$("$exe" --help)
commands=$(sed -n '/^commands:/,$ s/^  \([a-z][a-z-]*\).*/\1/p' <<<"$help")
[[ -n $commands ]] || fail "no commands found in --help"
for command in $commands; do
  grep -qE "(^|[^a-z-])$command( |$)" <<<"$text" || fail "command '$command' is not in $page"
done
for option in $(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$help" | sort -u); do
  grep -qF -- "$option" <<<"$text" || fail "option '$option' is not in $page"
done
echo "lorascope-train.1: $(wc -w <<<"$commands") commands and their options"

# A command with a --help of its own has a page of its own naming each of its options.
for command in $commands; do
  own=$("$exe" "$command" --help </dev/null 2>/dev/null) || continue
  command_page=$man_dir/lorascope-train-$command.1
  [[ -s $command_page ]] || { fail "$command has its own --help but no $command_page"; continue; }
  command_text=$(sed 's/\\-/-/g' "$command_page")
  for option in $(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$own" | sort -u); do
    grep -qF -- "$option" <<<"$command_text" || fail "option '$option' is not in $command_page"
  done
  echo "lorascope-train-$command.1: its options"
done

gui_page=$man_dir/lorascope.1
if [[ -e $gui_page ]]; then
  grep -q '^\.TH LORASCOPE "1"' "$gui_page" || fail "$gui_page has no '.TH LORASCOPE \"1\"' header"
  grep -q -- '--help' <<<"$(sed 's/\\-/-/g' "$gui_page")" || fail "$gui_page does not describe --help"
  echo "lorascope.1: present"
fi
exit $((failures > 0))
