#!/usr/bin/env bash
# check_gui_links.sh — the window's program links no trainer and no compute backend: none of the
# symbols of backend/train, backend/job or a Backend (the CPU and HIP backends) is in `lorascope`,
# and it needs no BLAS library (the backends' GEMMs). The same symbols and libraries are looked for
# in lorascope-train first, which must have them, so that the check cannot pass by finding nothing
# anywhere. (In the GPU flavours the HIP or CUDA runtime still comes in through lorascope_memory,
# whose hipMalloc DeviceMemory shares the library with the allocator policy profiles use; CI builds
# those flavours without the GUI.)
# Usage: check_gui_links.sh LORASCOPE LORASCOPE_TRAIN   (CTest: gui_links_no_trainer)
set -euo pipefail
gui="$1"
train="$2"
symbols='lorascope::(train|job)::|lorascope::compute::(Backend|CpuBackend|HipBackend|cpu::)'
libraries='libopenblas|libblas|libhipblas|librocblas|libcublas'

count() {  # PROGRAM: its defined symbols of the trainer and the backends
  nm -C --defined-only "$1" | grep -cE "$symbols" || true
}
needed() {  # PROGRAM: the BLAS libraries it needs
  readelf -d "$1" | grep NEEDED | grep -oE "$libraries" || true
}

in_train="$(count "$train")"
if ((in_train == 0)); then
  echo "FAIL: no trainer or backend symbol found in $train: the pattern finds nothing"
  exit 1
fi
if [[ -z "$(needed "$train")" ]]; then
  echo "FAIL: $train needs no BLAS library: the library pattern finds nothing"
  exit 1
fi
in_gui="$(count "$gui")"
if ((in_gui > 0)); then
  echo "FAIL: $gui holds $in_gui symbols of the trainer or a compute backend, e.g.:"
  nm -C --defined-only "$gui" | grep -E "$symbols" | head -5
  exit 1
fi
if [[ -n "$(needed "$gui")" ]]; then
  echo "FAIL: $gui needs $(needed "$gui" | tr '\n' ' ')"
  exit 1
fi
echo "ok: $gui holds no symbol of train, job or a compute backend and needs no BLAS library" \
  "($in_train such symbols in $train)"
