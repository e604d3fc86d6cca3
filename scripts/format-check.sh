#!/usr/bin/env bash
# format-check.sh — fails when a tracked C++/HIP file differs from .clang-format's layout.
#   scripts/format-check.sh          check (CI)
#   scripts/format-check.sh --fix    rewrite the files in place
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.hip' '*.cu')
if [[ ${#files[@]} -eq 0 ]]; then
  exit 0
fi
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
clang-format --dry-run -Werror "${files[@]}"
echo "format-check: ${#files[@]} files formatted as .clang-format says"
