#!/usr/bin/env bash
# check-amd-code-objects.sh BUILD_DIR — fails unless every HIP kernel object of a hip-amd build
# carries a code object for each target in the build's LORASCOPE_AMD_TARGETS.
set -euo pipefail
build="${1:?usage: check-amd-code-objects.sh BUILD_DIR}"
targets="$(sed -n 's/^LORASCOPE_AMD_TARGETS:STRING=//p' "$build/CMakeCache.txt")"
mapfile -t objects < <(find "$build" -name '*.hip.o')
if [[ ${#objects[@]} -eq 0 ]]; then
  echo "check-amd-code-objects: no HIP kernel objects under $build" >&2
  exit 1
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for object in "${objects[@]}"; do
  # clang embeds the device code as an offload bundle in the .hip_fatbin section.
  objcopy --dump-section .hip_fatbin="$scratch/fatbin" "$object" "$scratch/host.o"
  bundles="$(clang-offload-bundler-15 --list --type=o --input="$scratch/fatbin")"
  for target in ${targets//;/ }; do
    if ! grep -q -- "-$target\$" <<<"$bundles"; then
      echo "check-amd-code-objects: $object has no code object for $target:" >&2
      echo "$bundles" >&2
      exit 1
    fi
  done
  echo "$(basename "$object"): code objects for ${targets//;/, }"
done
