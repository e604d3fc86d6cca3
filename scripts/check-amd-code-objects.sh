#!/usr/bin/env bash
# check-amd-code-objects.sh [--all] [--no-spill REGEX] BUILD_DIR — fails unless every HIP kernel
# object of a hip-amd
# build carries a code object for each target the build compiled (LORASCOPE_AMD_COMPILED_TARGETS:
# the requested LORASCOPE_AMD_TARGETS less those the toolchain could not compile). With --all it
# also fails when any requested target was dropped (CI: the users' default targets must all build).
# Prints one line per kernel object and a line per target, then the register spills: every kernel
# whose code object for a target spills VGPRs or SGPRs to scratch memory (the AMDGPU metadata's
# .vgpr_spill_count and .sgpr_spill_count, read with llvm-readelf), with its scratch bytes per
# lane. Spills are reported; with --no-spill it also fails when a kernel whose name (demangled,
# e.g. attention::attentionForwardMmaKernel<128>) matches REGEX spills VGPRs for any target (CI:
# the matrix-core kernels, Note [registers on RDNA] in compute/hip/attention_mma.hip).
set -euo pipefail
all=0
no_spill=""
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --all) all=1 ;;
    --no-spill)
      no_spill="${2:?--no-spill needs a REGEX}"
      shift
      ;;
    *)
      echo "check-amd-code-objects: unknown option $1" >&2
      exit 2
      ;;
  esac
  shift
done
build="${1:?usage: check-amd-code-objects.sh [--all] [--no-spill REGEX] BUILD_DIR}"
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
requested="$(cache_value LORASCOPE_AMD_TARGETS)"
targets="$(cache_value LORASCOPE_AMD_COMPILED_TARGETS)"
dropped="$(cache_value LORASCOPE_AMD_DROPPED_TARGETS)"
compiler="$(cache_value CMAKE_CXX_COMPILER)"
if [[ -z "$targets" ]]; then
  echo "check-amd-code-objects: $build is not a configured hip-amd build" >&2
  exit 1
fi
if [[ $all -eq 1 && -n "$dropped" ]]; then
  echo "check-amd-code-objects: requested targets dropped at configure time: ${dropped//;/, }" \
    "(requested: ${requested//;/, }; see cmake's warnings)" >&2
  exit 1
fi

# clang's offload bundler: next to the compiler, else on PATH (plain or versioned).
bundler=""
for candidate in "$(dirname "$compiler")/clang-offload-bundler" clang-offload-bundler \
  clang-offload-bundler-{30..15}; do
  if command -v "$candidate" >/dev/null 2>&1; then
    bundler="$candidate"
    break
  fi
done
readelf="$(dirname "$compiler")/llvm-readelf"
[[ -x "$readelf" ]] || readelf="$(command -v llvm-readelf || true)"
[[ -n "$bundler" ]] || {
  echo "check-amd-code-objects: no clang-offload-bundler found (ROCm's llvm/bin, clang-tools-N)" >&2
  exit 1
}

mapfile -t objects < <(find "$build" -name '*.hip.o' | sort)
if [[ ${#objects[@]} -eq 0 ]]; then
  echo "check-amd-code-objects: no HIP kernel objects under $build" >&2
  exit 1
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
declare -A objects_per_target
for object in "${objects[@]}"; do
  # clang embeds the device code as an offload bundle in the .hip_fatbin section.
  objcopy --dump-section .hip_fatbin="$scratch/fatbin" "$object" "$scratch/host.o"
  bundles="$("$bundler" --list --type=o --input="$scratch/fatbin")"
  for target in ${targets//;/ }; do
    if ! grep -q -- "-$target\$" <<<"$bundles"; then
      echo "check-amd-code-objects: $object has no code object for $target:" >&2
      echo "$bundles" >&2
      exit 1
    fi
    objects_per_target[$target]=$((${objects_per_target[$target]:-0} + 1))
    if [[ -n "$readelf" ]]; then
      "$bundler" --unbundle --type=o --input="$scratch/fatbin" \
        --targets="$(grep -- "-$target\$" <<<"$bundles" | head -n 1)" --output="$scratch/code"
      # One line per spilling kernel: target, object, kernel (demangled), spills, scratch bytes.
      "$readelf" --notes "$scratch/code" | awk -v t="$target" -v o="$(basename "$object")" '
        /^ *\.name:/ { name = $2 }
        /\.private_segment_fixed_size:/ { scratch = $2 }
        /\.sgpr_spill_count:/ { sgpr = $2 }
        /\.vgpr_spill_count:/ { vgpr = $2 }
        /\.wavefront_size:/ {
          if (vgpr > 0 || sgpr > 0) print t, o, name, vgpr, sgpr, scratch
          vgpr = 0; sgpr = 0; scratch = 0
        }' >>"$scratch/spills"
    fi
  done
  echo "$(basename "$object"): code objects for ${targets//;/, }"
done
for target in ${targets//;/ }; do
  echo "  $target: ${objects_per_target[$target]} of ${#objects[@]} kernel objects"
done
if [[ -n "$dropped" ]]; then
  echo "  dropped at configure time (the toolchain cannot compile them): ${dropped//;/, }"
fi
if [[ -z "$readelf" ]]; then
  echo "register spills: not read (no llvm-readelf next to $compiler or on PATH)"
  if [[ -n "$no_spill" ]]; then
    echo "check-amd-code-objects: --no-spill needs llvm-readelf to read the spills" >&2
    exit 1
  fi
elif [[ ! -s "$scratch/spills" ]]; then
  echo "register spills: none, in any kernel for any target"
else
  # Per kernel, the targets whose code spills VGPRs (each reload is a trip to scratch memory):
  # VGPRs spilled and scratch bytes per lane. SGPR spills land in VGPR lanes and are only counted.
  demangle="$(dirname "$compiler")/llvm-cxxfilt"
  [[ -x "$demangle" ]] || demangle=cat
  echo "register spills to scratch (kernel: target VGPRs/bytes per lane, ...):"
  while read -r target object name vgpr sgpr bytes; do
    kernel="$("$demangle" <<<"$name" | sed -E 's/^void //; s/\(anonymous namespace\):://; s/^lorascope::compute::hip:://; s/\(.*//')"
    echo "$object $kernel $target $vgpr $sgpr $bytes"
  done <"$scratch/spills" >"$scratch/named"
  awk '
    $4 > 0 { key = $1 " " $2; if (!(key in line)) order[n++] = key; line[key] = line[key] sprintf(" %s %s/%s,", $3, $4, $6) }
    $4 == 0 { sgprOnly[$3] += 1 }
    END {
      for (i = 0; i < n; ++i) { text = line[order[i]]; sub(/,$/, "", text); print "  " order[i] ":" text }
      for (t in sgprOnly) printf "  %s: %d kernels spill only SGPRs (into VGPR lanes, no scratch)\n", t, sgprOnly[t]
    }' "$scratch/named"
  if [[ -n "$no_spill" ]]; then
    forbidden="$(awk -v re="$no_spill" '$4 > 0 && $2 ~ re { print "  " $2 " on " $3 ": " $4 " VGPRs" }' \
      "$scratch/named")"
    if [[ -n "$forbidden" ]]; then
      echo "check-amd-code-objects: kernels matching /$no_spill/ spill VGPRs to scratch:" >&2
      echo "$forbidden" >&2
      exit 1
    fi
  fi
fi
if [[ -n "$no_spill" ]]; then
  echo "register spills: none in the kernels matching /$no_spill/, for any target"
fi
