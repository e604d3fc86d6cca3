#!/usr/bin/env bash
# check-layers.sh — the include graph of the source tree has no upward edge, and the GUI stays on
# its side of the engine boundary.
#
# Folders are ranked bottom to top (LAYERS below, the order docs/ARCHITECTURE.md explains). A file
# may include headers of its own folder and of folders ranked below it; an include of a folder
# ranked above it is an upward edge and fails the check. The GUI's folders (app/gui, widgets) are
# held to more than a rank: ALLOWED lists what each may include, and an include of any other
# folder fails — compute, train and job above all: the GPU and the run are the engine's, reached
# through engine/Protocol's commands and events, so that a GPU fault costs an engine process,
# never the window (docs/ARCHITECTURE.md, "The engine boundary"). Also fails: a Qt header included
# anywhere in backend/ (QT_ALLOWED names exceptions; there are none: the backend is plain C++ and
# Qt starts with widgets/ and the app's engine adapter, app/gui/EngineAdapter), and a header of the
# backends' insides (compute/cpu/, compute/hip/) included outside backend/compute (their public
# API is compute/*.h), and a header of tests/ included from backend/, widgets/ or app/ (what a
# shipped command needs lives in backend/: doctor's parity suite is backend/parity).
# Usage: scripts/check-layers.sh [SOURCE_DIR]   (run by CTest as `check_layers`)
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"

# Bottom to top. backend/<name> folders are named by <name>; top-level folders by their path.
LAYERS=(common settings gpu memory runtime compute parity model jinja text data profiles telemetry
        runs group engine external train job widgets app/cli app/gui)
# Files of backend/ allowed to include Qt headers: none.
QT_ALLOWED='^$'
# What the GUI's folders may include besides their own: the engine (protocol and hosts), external
# (the host of a supervised command), profiles, the settings registry, run folders (runs),
# telemetry (the processes page's readings), common, and model/data/text for CPU-only inspection
# and validation (the setup page). A folder not named here does not exist yet (settings, runs)
# until it lands; naming it early costs nothing.
declare -A ALLOWED=(
  [widgets]="common engine profiles settings"
  [app/gui]="common engine external profiles settings runs telemetry model data text widgets"
)
# Never from the GUI's folders, whatever ALLOWED says: the GPU and the run.
BEHIND_ENGINE="compute train job"
declare -A rank
for i in "${!LAYERS[@]}"; do rank[${LAYERS[$i]}]=$i; done

layer_of_file() {  # backend/train/X.cpp -> train; widgets/X.h -> widgets; app/gui/X -> app/gui
  case "$1" in
    backend/*) local rest="${1#backend/}"; echo "${rest%%/*}" ;;
    app/*) local rest="${1#app/}"; echo "app/${rest%%/*}" ;;
    *) echo "${1%%/*}" ;;
  esac
}
layer_of_include() {  # "train/X.h" -> train; "gui/X.h" -> app/gui; "cli/X.h" -> app/cli
  local head="${1%%/*}"
  case "$head" in
    gui | cli) echo "app/$head" ;;
    *) echo "$head" ;;
  esac
}

# The header of tests/ that an include names, "" when it names none: "parity/X.h" is tests/parity/X.h
# when backend/ has no such file; a bare "X.h" is tests/support/X.h (on every test's include
# path) when the including file's folder has no X.h.
tests_header_of() {  # include file
  if [[ "$1" == */* ]]; then
    [[ -f "tests/$1" && ! -f "backend/$1" ]] && echo "tests/$1"
  else
    [[ -f "tests/support/$1" && ! -f "$(dirname "$2")/$1" ]] && echo "tests/support/$1"
  fi
  return 0
}

failures=0
while IFS= read -r file; do
  from="$(layer_of_file "$file")"
  [[ -n "${rank[$from]:-}" ]] || continue
  while IFS= read -r line; do
    number="${line%%:*}"
    include="${line#*:}"
    include="${include#*\"}"
    include="${include%%\"*}"
    if tests_header="$(tests_header_of "$include" "$file")" && [[ -n "$tests_header" ]]; then
      echo "$file:$number: includes \"$include\" ($tests_header): tests/ headers are for tests;" \
        "move what a shipped file needs into backend/"
      failures=$((failures + 1))
    fi
    [[ "$include" == */* ]] || continue  # a header beside the file
    to="$(layer_of_include "$include")"
    [[ -n "${rank[$to]:-}" && "$to" != "$from" ]] || continue
    if [[ "$include" == compute/cpu/* || "$include" == compute/hip/* ]] &&
      [[ "$file" != backend/compute/* ]]; then
      echo "$file:$number: includes \"$include\": only backend/compute includes compute/cpu/ and compute/hip/"
      failures=$((failures + 1))
    fi
    if ((rank[$to] > rank[$from])); then
      echo "$file:$number: includes \"$include\": $from may not include $to (ranked above it)"
      failures=$((failures + 1))
    elif [[ -n "${ALLOWED[$from]:-}" ]]; then
      if [[ " $BEHIND_ENGINE " == *" $to "* ]]; then
        echo "$file:$number: includes \"$include\": $to is behind the engine boundary: the GPU" \
          "and the run belong to the engine process (send engine/Protocol commands)"
        failures=$((failures + 1))
      elif [[ " ${ALLOWED[$from]} " != *" $to "* ]]; then
        echo "$file:$number: includes \"$include\": $from may include only ${ALLOWED[$from]}"
        failures=$((failures + 1))
      fi
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include "' "$file" || true)
  if [[ "$file" == backend/* && ! "$file" =~ $QT_ALLOWED ]] &&
    grep -qE '^[[:space:]]*#[[:space:]]*include <Q[A-Za-z]*>' "$file"; then
    echo "$file: includes a Qt header; the backend is plain C++ (Qt starts in widgets/, app/gui/)"
    failures=$((failures + 1))
  fi
done < <(find backend widgets app -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.hip' \) | sort)

if ((failures > 0)); then
  echo "check-layers: $failures upward or disallowed include(s) or tests/ header(s); see LAYERS" \
    "and ALLOWED in scripts/check-layers.sh"
  exit 1
fi
echo "check-layers: no upward include among ${#LAYERS[@]} layers; app/gui and widgets within" \
  "their allow-lists"
