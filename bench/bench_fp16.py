"""fp32 <-> fp16 conversion throughput: vmafdnn's integer kernels vs numpy's
astype, on the same arrays in the same run (ratio > 1: vmafdnn is faster).

    python bench/bench_fp16.py
"""
import os
import sys

import numpy as np

import vmafdnn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_times  # noqa: E402


def main():
    rng = np.random.default_rng(0)
    print(f"vmafdnn {vmafdnn.__version__}, numpy {np.__version__}")
    for n in (1 << 20, 8 << 20):
        f32 = (rng.standard_normal(n) * 1000).astype(np.float32)
        f16 = f32.astype(np.float16)
        assert np.array_equal(vmafdnn.fp32_to_fp16(f32).view(np.uint16), f16.view(np.uint16))
        number = 20 if n <= 1 << 20 else 3
        rows = (
            ("fp32->fp16", lambda: vmafdnn.fp32_to_fp16(f32), lambda: f32.astype(np.float16)),
            ("fp16->fp32", lambda: vmafdnn.fp16_to_fp32(f16), lambda: f16.astype(np.float32)),
        )
        for label, ours, numpys in rows:
            t = best_times({"ours": ours, "numpy": numpys}, number=number)
            t_ours, t_numpy = t["ours"], t["numpy"]
            print(f"{label} {n >> 20}M: vmafdnn {t_ours * 1e9 / n:.2f} ns/elem, "
                  f"numpy {t_numpy * 1e9 / n:.2f} ns/elem, ratio {t_numpy / t_ours:.2f}x")


if __name__ == "__main__":
    main()
