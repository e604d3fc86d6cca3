#!/usr/bin/env bash
# test_completion.sh COMPLETION_FILE LORASCOPE_TRAIN — the bash completion, driven as bash drives
# it (COMP_WORDS/COMP_CWORD in, COMPREPLY out), against the built program's --help.
set -euo pipefail
# shellcheck source=/dev/null
source "$1"
exe=$2
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
mkdir "$workdir/run-a" && touch "$workdir/data.jsonl"

failures=0
# complete WORD... : the candidates for the last word.
complete_words() {
  COMP_WORDS=("$exe" "$@")
  COMP_CWORD=$(($#))
  COMPREPLY=()
  _lorascope_train
  printf '%s\n' "${COMPREPLY[@]}"
}
expect() {  # expect DESCRIPTION EXPECTED-CANDIDATES -- WORDS...
  local what=$1 want=$2
  shift 3
  local got
  got=$(complete_words "$@" | sort | tr '\n' ' ' | sed 's/ $//')
  if [[ $got == "$want" ]]; then
    echo "ok: $what: $got"
  else
    echo "FAIL: $what: expected '$want', got '$got'"
    failures=$((failures + 1))
  fi
}

expect "commands starting with t" "tokenize train" -- t
commands=$("$exe" --help | sed -n '/^commands:/,$ s/^  \([a-z][a-z-]*\).*/\1/p')
expect "every command of --help is offered" \
  "$(printf '%s\n' --help --version ${commands} | sort | tr '\n' ' ' | sed 's/ $//')" -- ""
expect "train's options starting with --lo" "--lora-alpha --lora-dropout --lora-r" -- train --lo
expect "export's options starting with --me" "--merge" -- export run --me
expect "--device lists its choices" "auto cpu gpu" -- train --device ""
expect "--schedule lists its choices" "constant cosine linear" -- train --schedule ""
expect "--resume completes folders" "$workdir/run-a" -- train --resume "$workdir/r"
expect "--data completes files" "$workdir/data.jsonl" -- train --data "$workdir/d"
expect "--steps takes a number: nothing offered" "" -- train --steps ""
exit $((failures > 0))
