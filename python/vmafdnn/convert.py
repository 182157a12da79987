"""fp16 conversions with the library's integer, round-to-nearest-even kernels
(bit-identical to numpy's astype, and identical on every platform)."""
import numpy as np

from ._native import ffi, lib

__all__ = ["fp32_to_fp16", "fp16_to_fp32"]


def _convert(array, src_dtype, dst_dtype, kernel, src_ctype, dst_ctype) -> np.ndarray:
    src = np.ascontiguousarray(array, dtype=src_dtype)
    dst = np.empty(src.shape, dtype=dst_dtype)
    kernel(ffi.from_buffer(src_ctype, src), ffi.from_buffer(dst_ctype, dst), src.size)
    return dst


def fp32_to_fp16(array) -> np.ndarray:
    """float32 array (any shape) -> float16 array of the same shape."""
    return _convert(array, np.float32, np.float16, lib.vmaf_dnn_fp32_to_fp16,
                    "float[]", "uint16_t[]")


def fp16_to_fp32(array) -> np.ndarray:
    """float16 array (any shape) -> float32 array of the same shape (exact)."""
    return _convert(array, np.float16, np.float32, lib.vmaf_dnn_fp16_to_fp32,
                    "uint16_t[]", "float[]")
