#!/usr/bin/env python3
"""nf4.py — the NF4 double-quantisation reference that tests/compute/test_nf4.cpp compares against.

Writes OUT (default tests/compute/data/nf4_reference.json): QLoRA's NF4 code table and
bitsandbytes' signed 8-bit dynamic code (create_dynamic_map(signed=True, max_exponent_bits=7,
total_bits=8)), both computed here in PyTorch f32 from their published definitions, and for a
few weight tensors the quantised state as QLoRA defines it (blocks of 64 with their absmax; the
absmax values, less their mean, quantised again in groups of 256 with the dynamic code) and the
dequantised weights at sampled positions.

The weights come from an integer generator that LoRAscope's test repeats exactly (every weight
is an integer times a power of two, so both sides start from the same f32 values without
shipping them). Everything is computed in torch f32 on the CPU, independently of LoRAscope's
code: "nearest" is torch.argmin over |v − code| (ties to the lower index), the offset is the
mean of the absmax values taken in double and rounded to f32.

When bitsandbytes is importable and a CUDA device is present, its quantize_4bit(nf4,
compress_statistics=True, blocksize=64) is run on the same weights too and the agreement is
recorded under "bitsandbytes" (else that key says why not).

Run where torch is installed (no network needed):
    python3 scripts/reference/nf4.py [OUT]
"""
import json
import math
import os
import sys

import torch

NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
       -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
       0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
       0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]
BLOCK = 64
GROUP = 256
SAMPLES = 256
MASK64 = (1 << 64) - 1

# name, element count, generator seed. Sizes: one partial block; exactly one group; two groups
# plus a partial block and a partial group (so both padding rules are exercised).
CASES = [("tiny", 37, 1), ("one_group", BLOCK * GROUP, 2), ("ragged", 2 * BLOCK * GROUP + 5 * BLOCK + 17, 3)]


def dynamic_map():
    """create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8), as published."""
    data = []
    max_exponent_bits, non_sign_bits = 7, 7
    for i in range(max_exponent_bits):
        fraction_items = 2 ** (i + non_sign_bits - max_exponent_bits) + 1
        boundaries = torch.linspace(0.1, 1, fraction_items, dtype=torch.float32)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
        data += (-(10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
    data.append(0)
    data.append(1.0)
    assert len(data) == 256
    data.sort()
    return torch.tensor(data, dtype=torch.float32)


def weights(count, seed):
    """The test's weights: per element the sum of four 16-bit draws of a 64-bit LCG, times
    2^-17, times 2^(block % 5 − 2); block 3 is all zeros and block 5 has one non-zero weight."""
    state = seed
    values = []
    for i in range(count):
        total = 0
        for _ in range(4):
            state = (state * 6364136223846793005 + 1442695040888963407) & MASK64
            total += ((state >> 33) & 0xFFFF) - 32768
        block = i // BLOCK
        if block == 3 or (block == 5 and i % BLOCK != 10):
            total = 0
        values.append(math.ldexp(total, -17 + block % 5 - 2))
    return torch.tensor(values, dtype=torch.float32)


def nearest(values, table):
    return (values.unsqueeze(-1) - table).abs().argmin(dim=-1)


def quantize(w, code, dynamic):
    n = w.numel()
    blocks = (n + BLOCK - 1) // BLOCK
    padded = torch.zeros(blocks * BLOCK, dtype=torch.float32)
    padded[:n] = w
    b = padded.view(blocks, BLOCK)
    absmax = b.abs().max(dim=1).values
    safe = torch.where(absmax > 0, absmax, torch.ones_like(absmax))
    normed = torch.where(absmax[:, None] > 0, b / safe[:, None], torch.zeros_like(b))
    index = nearest(normed, code).view(-1)[:n]
    offset = absmax.double().mean().float()
    centred = absmax - offset
    groups = (blocks + GROUP - 1) // GROUP
    qabsmax, absmax2 = [], []
    for g in range(groups):
        part = centred[g * GROUP:(g + 1) * GROUP]
        scale = part.abs().max()
        v = part / scale if scale > 0 else torch.zeros_like(part)
        qabsmax += nearest(v, dynamic).tolist()
        absmax2.append(scale)
    absmax2 = torch.stack(absmax2)
    qabsmax = torch.tensor(qabsmax)
    # Dequantised: two separately rounded f32 operations for the scale, as bitsandbytes.
    group_of_block = torch.arange(blocks) // GROUP
    rebuilt = dynamic[qabsmax] * absmax2[group_of_block]
    rebuilt = rebuilt + offset
    dequant = code[index] * rebuilt[torch.arange(n) // BLOCK]
    # Two codes a byte, the first in the high nibble; an odd count pads the last low nibble 0.
    nibbles = index.tolist() + ([0] if n % 2 else [])
    packed = bytes((nibbles[i] << 4) | nibbles[i + 1] for i in range(0, len(nibbles), 2))
    return dict(offset=offset.item(), absmax=absmax, absmax2=absmax2, qabsmax=qabsmax,
                packed=packed, dequant=dequant)


def bitsandbytes_check(cases, code, dynamic):
    try:
        import bitsandbytes.functional as bnbf
    except Exception as e:  # noqa: BLE001 — any import failure means "not available"
        return {"available": False, "reason": f"import bitsandbytes: {e}"}
    if not torch.cuda.is_available():
        return {"available": False, "reason": "no CUDA device"}
    out = {"available": True, "version": getattr(sys.modules.get("bitsandbytes"), "__version__", "?"),
           "cases": {}}
    for name, count, seed in CASES:
        w = weights(count, seed)
        mine = cases[name]
        q, state = bnbf.quantize_4bit(w.cuda(), blocksize=BLOCK, compress_statistics=True,
                                      quant_type="nf4")
        back = bnbf.dequantize_4bit(q, state).float().cpu().view(-1)[:count]
        packed = q.view(-1).cpu().tolist()[:len(mine["packed"])]
        same_codes = sum(1 for a, b in zip(packed, mine["packed"]) if a == b)
        out["cases"][name] = {
            "code_bytes_equal": same_codes,
            "code_bytes": len(mine["packed"]),
            "qabsmax_equal": int((state.absmax.cpu().long() == mine["qabsmax"]).sum()),
            "qabsmax": int(mine["qabsmax"].numel()),
            "offset": float(state.offset),
            "max_abs_dequant_difference": float((back - mine["dequant"]).abs().max()),
        }
    return out


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else "tests/compute/data/nf4_reference.json"
    code = torch.tensor(NF4, dtype=torch.float32)
    dynamic = dynamic_map()
    result = {
        "generator": "scripts/reference/nf4.py",
        "torch": torch.__version__,
        "nf4_code": code.tolist(),
        "dynamic_code": dynamic.tolist(),
        "cases": [],
    }
    states = {}
    for name, count, seed in CASES:
        w = weights(count, seed)
        s = quantize(w, code, dynamic)
        states[name] = s
        step = max(1, count // SAMPLES)
        positions = list(range(0, count, step))[:SAMPLES] + [count - 1]
        result["cases"].append({
            "name": name,
            "count": count,
            "seed": seed,
            "offset": s["offset"],
            "absmax2": s["absmax2"].tolist(),
            "qabsmax": s["qabsmax"].tolist(),
            "codes_hex": s["packed"].hex(),
            "sample_positions": positions,
            "sample_weights": [w[p].item() for p in positions],
            "sample_dequantized": [s["dequant"][p].item() for p in positions],
            "dequantized_sum_of_squares": float(s["dequant"].double().pow(2).sum()),
        })
    result["bitsandbytes"] = bitsandbytes_check(states, code, dynamic)
    os.makedirs(os.path.dirname(out_path) or ".", exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"nf4.py: wrote {out_path} ({len(CASES)} cases); bitsandbytes: "
          f"{json.dumps(result['bitsandbytes'])[:400]}")


if __name__ == "__main__":
    main()
