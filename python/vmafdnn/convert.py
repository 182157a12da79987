"""fp16 conversions with the library's integer, round-to-nearest-even kernels
(bit-identical to numpy's astype, and identical on every platform)."""
import numpy as np

from ._native import ffi, lib

__all__ = ["fp32_to_fp16", "fp16_to_fp32"]


def fp32_to_fp16(array) -> np.ndarray:
    """float32 array (any shape) -> float16 array of the same shape."""
    src = np.ascontiguousarray(array, dtype=np.float32)
    dst = np.empty(src.shape, dtype=np.float16)
    lib.vmaf_dnn_fp32_to_fp16(ffi.from_buffer("float[]", src),
                              ffi.from_buffer("uint16_t[]", dst), src.size)
    return dst


def fp16_to_fp32(array) -> np.ndarray:
    """float16 array (any shape) -> float32 array of the same shape (exact)."""
    src = np.ascontiguousarray(array, dtype=np.float16)
    dst = np.empty(src.shape, dtype=np.float32)
    lib.vmaf_dnn_fp16_to_fp32(ffi.from_buffer("uint16_t[]", src),
                              ffi.from_buffer("float[]", dst), src.size)
    return dst
