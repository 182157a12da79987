"""vmafdnn: run tiny ONNX video-quality models through libvmafdnn.

The C library does the work; this package translates numpy arrays, Python
exceptions and names. See ``vmafdnn.Session`` to run a model,
``vmafdnn.score`` to score a clip and ``vmafdnn.Context`` for frame-by-frame
scoring.
"""
import errno as _errno

from ._native import ensure_ort as _ensure_ort
from ._native import ffi as _ffi
from ._native import last_error as _last_error
from ._native import lib as _lib
from .context import Batching, Context, ModelInfo
from .convert import fp16_to_fp32, fp32_to_fp16
from .errors import (AlreadyExistsError, BusyError, ClosedError, DnnError, InvalidArgumentError,
                     InvalidModelError, MemoryBudgetError, ModelNotFoundError,
                     ModelRuntimeError, ModelTooLargeError, NameTooLongError,
                     NotARegularFileError, OutOfMemoryError, OutputTooSmallError,
                     ReportBufferTooSmallError,
                     PathNotADirectoryError, PermissionDeniedError, RangeError,
                     RunCancelledError, RuntimeFailureError, RuntimeNotFoundError,
                     RunTimeoutError, SymlinkRefusedError, UnsupportedError)
from .scoring import Canceller, InputMismatchError, UsageError, score
from .session import (DEVICES, EP_PACKAGE_ERRORS, MAX_BATCH, MAX_THREADS, POLICY_KEYWORDS,
                      Session, TensorInfo, ep_devices, ep_libraries, explain_device,
                      register_ep_library)

__version__ = _ffi.string(_lib.vmaf_dnn_version()).decode()

__all__ = [
    "available", "ort_version", "ort_library_path", "unavailable_reason", "Session",
    "TensorInfo", "DEVICES", "fp32_to_fp16", "fp16_to_fp32", "DnnError",
    "InvalidArgumentError", "ModelNotFoundError", "PermissionDeniedError",
    "NotARegularFileError", "ModelTooLargeError", "InvalidModelError", "UnsupportedError",
    "RuntimeNotFoundError", "OutputTooSmallError", "ReportBufferTooSmallError", "BusyError",
    "OutOfMemoryError",
    "RangeError", "RuntimeFailureError", "__version__", "Batching", "Context", "ModelInfo", "score",
    "InputMismatchError", "UsageError", "ModelRuntimeError", "RunTimeoutError",
    "RunCancelledError", "MemoryBudgetError", "SymlinkRefusedError", "PathNotADirectoryError",
    "NameTooLongError", "AlreadyExistsError", "ClosedError", "Canceller", "MAX_BATCH",
    "MAX_THREADS",
    "POLICY_KEYWORDS", "ep_devices", "ep_libraries", "explain_device", "register_ep_library",
    "EP_PACKAGE_ERRORS", "batch", "bdrate",
]


def available() -> bool:
    """True when ONNX Runtime is loaded (or can be loaded now)."""
    _ensure_ort()
    return bool(_lib.vmaf_dnn_available())


def unavailable_reason() -> str:
    """Why ONNX Runtime cannot be loaded ("" when it can)."""
    return "" if available() else _last_error()


def ort_version() -> str:
    """The loaded ONNX Runtime's version ("1.31.1"); raises when there is none."""
    if not available():
        raise RuntimeNotFoundError(_errno.ENOSYS, _last_error())
    return _ffi.string(_lib.vmaf_dnn_ort_version()).decode()


def ort_library_path() -> str:
    """The file ONNX Runtime was loaded from; raises when there is none."""
    if not available():
        raise RuntimeNotFoundError(_errno.ENOSYS, _last_error())
    return _ffi.string(_lib.vmaf_dnn_ort_library_path()).decode()


# Last: both use the names above. The batch module is itself callable, so
# vmafdnn.batch(jobs, ...) runs a batch and vmafdnn.batch.read_results reads one.
from . import batch, bdrate  # noqa: E402,F401
