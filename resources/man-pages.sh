#!/usr/bin/env bash
# man-pages.sh LORASCOPE_TRAIN OUT_DIR VERSION — the man pages of lorascope-train, made by help2man
# from what the program prints (run at build time by resources/CMakeLists.txt):
#   lorascope-train.1       from `lorascope-train --help` (every command and its options)
#   lorascope-train-CMD.1   from `lorascope-train CMD --help`, for each command that has its own
#                           help (exit 0), git-style
# Pages of commands that no longer exist are removed, so OUT_DIR holds exactly what is installed.
set -euo pipefail
exe=$(realpath "$1")
out=$2
version=$3
mkdir -p "$out"
rm -f "$out"/lorascope-train*.1
help2man --no-info --version-string="$version" --section=1 \
  --name="LoRA fine-tuning of LLMs from the command line, and the LoRAscope engine" \
  --output="$out/lorascope-train.1" "$exe"

wrappers=$(mktemp -d)
trap 'rm -rf "$wrappers"' EXIT
# The help is read whole first: awk's early exit below would SIGPIPE a program piped into it,
# which pipefail turns into a failed build.
help_text=$("$exe" --help)
commands=$(sed -n '/^commands:/,$ s/^  \([a-z][a-z-]*\).*/\1/p' <<<"$help_text")
for command in $commands; do
  "$exe" "$command" --help </dev/null >/dev/null 2>&1 || continue
  # help2man runs PROGRAM --help; the wrapper's name becomes the page's name.
  wrapper=$wrappers/lorascope-train-$command
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$exe" "$command" >"$wrapper"
  chmod +x "$wrapper"
  # The command's summary in the overview: the indented lines under "  CMD [options]" (past a
  # wrapped usage), first sentence.
  summary=$(awk -v cmd="$command" '
    $1 == cmd && /^  [a-z]/ { on = 1; next }
    on && /^      / {
      sub(/^ +/, "")
      if (text == "" && /^\[/) next  # the usage line wrapped: [--option ...]
      text = text (text == "" ? "" : " ") $0
      next
    }
    on { exit }
    END { sub(/\. .*/, "", text); sub(/\.$/, "", text); print text }' <<<"$help_text")
  help2man --no-info --version-string="$version" --section=1 \
    --name="${summary:-the $command command of lorascope-train}" \
    --output="$out/lorascope-train-$command.1" "$wrapper"
done
echo "man-pages: $(cd "$out" && ls lorascope-train*.1 | tr '\n' ' ')"
