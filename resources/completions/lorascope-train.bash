# bash completion for lorascope-train (installed as
# /usr/share/bash-completion/completions/lorascope-train). The commands, each command's options
# and the values an option lists (--device cpu|gpu|auto) are read from the program's own help —
# `lorascope-train CMD --help` where the command has one, else its line of `lorascope-train
# --help` — so the completion always knows what the installed program knows.

# The help text that describes command $2 of program $1.
_lorascope_train_help_of() {
  local text
  text=$(timeout 2 "$1" "$2" --help </dev/null 2>/dev/null) && [[ -n $text ]] && {
    printf '%s\n' "$text"
    return
  }
  timeout 2 "$1" --help </dev/null 2>/dev/null | grep -E "^  $2( |\$)"
}

_lorascope_train() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} prog=${COMP_WORDS[0]}
  local overview
  overview=$(timeout 2 "$prog" --help </dev/null 2>/dev/null) || return 0
  if ((COMP_CWORD == 1)); then
    local commands
    commands=$(sed -n '/^commands:/,$ s/^  \([a-z][a-z-]*\).*/\1/p' <<<"$overview")
    mapfile -t COMPREPLY < <(compgen -W "$commands --help --version" -- "$cur")
    return 0
  fi
  local help
  help=$(_lorascope_train_help_of "$prog" "${COMP_WORDS[1]}")

  # The value of an option: the choices its help lists (a|b|c), else a path.
  if [[ $prev == --* ]]; then
    local choices
    choices=$(grep -oE -- "${prev}[ =][a-z0-9_-]+(\|[a-z0-9_.-]+)+" <<<"$help" | head -n 1 |
      sed -E 's/^[^ =]+[ =]//; s/\|/ /g')
    if [[ -n $choices ]]; then
      mapfile -t COMPREPLY < <(compgen -W "$choices" -- "$cur")
      return 0
    fi
    if grep -qE -- "${prev}[ =]?(DIR|RUN_DIR|OUT_DIR|OUT|PATH[A-Z_]*)" <<<"$help"; then
      compopt -o filenames 2>/dev/null || true
      mapfile -t COMPREPLY < <(compgen -d -- "$cur")
      return 0
    fi
    if grep -qE -- "${prev}[ =]?(FILE|[a-z.]+\.json)" <<<"$help"; then
      compopt -o filenames 2>/dev/null || true
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return 0
    fi
    # A flag (no value) or a number: fall through to the options.
    if grep -qE -- "$prev [A-Z]" <<<"$help"; then
      return 0
    fi
  fi
  if [[ $cur == -* ]]; then
    local options
    options=$(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$help" | sort -u)
    mapfile -t COMPREPLY < <(compgen -W "$options" -- "$cur")
    return 0
  fi
  compopt -o filenames 2>/dev/null || true
  mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}
complete -F _lorascope_train lorascope-train
