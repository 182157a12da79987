"""vmafdnn: run tiny ONNX video-quality models through libvmafdnn.

The C library does the work; this package translates numpy arrays, Python
exceptions and names. See ``vmafdnn.Session`` to run a model,
``vmafdnn.score`` to score a clip and ``vmafdnn.Context`` for frame-by-frame
scoring.
"""
import errno as _errno
import importlib as _importlib

from . import _ep_packages  # noqa: F401  (announces installed plugin EP packages)
from ._ep_packages import EP_PACKAGE_ERRORS
from ._native import ensure_ort as _ensure_ort
from ._native import ffi as _ffi
from ._native import last_error as _last_error
from ._native import lib as _lib
from .errors import (AlreadyExistsError, BusyError, ClosedError, DnnError, InvalidArgumentError,
                     InvalidModelError, MemoryBudgetError, ModelNotFoundError,
                     ModelRuntimeError, ModelTooLargeError, NameTooLongError,
                     NotARegularFileError, OutOfMemoryError, OutputTooSmallError,
                     ReportBufferTooSmallError,
                     PathNotADirectoryError, PermissionDeniedError, RangeError,
                     RunCancelledError, RuntimeFailureError, RuntimeNotFoundError,
                     RunTimeoutError, SymlinkRefusedError, UnsupportedError)

__version__ = _ffi.string(_lib.vmaf_dnn_version()).decode()


def source_digest() -> str:
    """16 hex digits naming the sources the C library was built from: another for a build
    of changed sources, where ``__version__`` stays put between releases."""
    return _ffi.string(_lib.vmaf_dnn_source_digest()).decode()


def cpu_kernels() -> str:
    """Which build of the library's CPU kernels this CPU runs: "x86-64-v4" (VMAF's ADM and
    motion with AVX-512, the rest with AVX2), "avx2" or "baseline". Every build scores alike
    to the last digit; this says which ran."""
    return _ffi.string(_lib.vmaf_dnn_cpu_kernels()).decode()


__all__ = [
    "available", "ort_version", "ort_library_path", "unavailable_reason", "Session",
    "TensorInfo", "StaticRuns", "DEVICES", "fp32_to_fp16", "fp16_to_fp32", "DnnError",
    "InvalidArgumentError", "ModelNotFoundError", "PermissionDeniedError",
    "NotARegularFileError", "ModelTooLargeError", "InvalidModelError", "UnsupportedError",
    "RuntimeNotFoundError", "OutputTooSmallError", "ReportBufferTooSmallError", "BusyError",
    "OutOfMemoryError",
    "RangeError", "RuntimeFailureError", "__version__", "source_digest", "cpu_kernels", "Batching",
    "Context",
    "ModelInfo", "score",
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


# The names below are imported on first use (PEP 562), not with the package:
# they pull in numpy, which a process that sets numpy's threads up first (the
# command line tool: vmafdnn._console) must import after doing so.
_LAZY = {
    "Batching": "context", "Context": "context", "ModelInfo": "context",
    "fp16_to_fp32": "convert", "fp32_to_fp16": "convert",
    "Canceller": "scoring", "InputMismatchError": "scoring", "UsageError": "scoring",
    "score": "scoring",
    "DEVICES": "session", "MAX_BATCH": "session",
    "MAX_THREADS": "session", "POLICY_KEYWORDS": "session", "Session": "session",
    "TensorInfo": "session", "StaticRuns": "session", "ep_devices": "session", "ep_libraries": "session",
    "explain_device": "session", "register_ep_library": "session",
}

# The public submodules, attributes of the package as when it imported them
# all (vmafdnn.models.path(...) right after import vmafdnn), each imported on
# first use. The batch module is itself callable: vmafdnn.batch(jobs, ...)
# runs a batch, vmafdnn.batch.read_results reads one. Not _console or
# __main__: importing those is for the command line tool alone.
_SUBMODULES = frozenset({
    "batch", "bdrate", "cli", "cliargs", "context", "convert", "errors", "frames", "jobs",
    "media", "models", "names", "paths", "plot", "results", "runners", "scoring", "session",
    "video",
})


def __getattr__(name):
    if name in _SUBMODULES:
        return _importlib.import_module(f".{name}", __name__)  # binds it here too
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)
