"""The compiled binding and the one place that turns C return codes into
exceptions. Also finds ONNX Runtime for the C library (see find_ort_library).
"""
import glob
import importlib.util
import os

from ._vmafdnn_cffi import ffi, lib
from .errors import error_for

__all__ = ["ffi", "lib", "check", "ensure_ort", "find_ort_library"]


def last_error() -> str:
    return ffi.string(lib.vmaf_dnn_last_error()).decode("utf-8", "replace")


def check(rc: int) -> int:
    """Raises the DnnError subclass for a negative return code."""
    if rc < 0:
        raise error_for(-rc, last_error() or os.strerror(-rc))
    return rc


def find_ort_library():
    """The ``onnxruntime`` package's own libonnxruntime, without importing it.

    Whichever of the onnxruntime, onnxruntime-gpu and onnxruntime-openvino
    wheels is installed provides the package ``onnxruntime`` with
    ``capi/libonnxruntime.so.<version>``; importing the package would load its
    Python extension (and, for the GPU wheel, CUDA) for nothing.
    """
    try:
        spec = importlib.util.find_spec("onnxruntime")
    except (ImportError, ValueError):  # a broken or stubbed-out installation
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        found = sorted(glob.glob(os.path.join(location, "capi", "libonnxruntime.so*")))
        if found:
            return found[-1]
    return None


_ort_attempted = False


def ensure_ort() -> None:
    """Points the C library at ORT once per process, in the documented order:
    VMAFDNN_ORT_LIBRARY (handled in C), then the Python package's library,
    then the loader's search path (in C)."""
    global _ort_attempted
    if _ort_attempted:
        return
    _ort_attempted = True
    if os.environ.get("VMAFDNN_ORT_LIBRARY"):
        return
    path = find_ort_library()
    if path is not None and lib.vmaf_dnn_ort_version() == ffi.NULL:
        # A failure here is not fatal: the loader-path fallback may still work,
        # and vmafdnn.available() reports the final outcome.
        lib.vmaf_dnn_load_ort(os.fsencode(path))
