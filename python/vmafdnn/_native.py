"""The compiled binding and the one place that turns C return codes into
exceptions. Also finds ONNX Runtime for the C library (see find_ort_library),
turns Python strings into C strings and back (c_path, c_name, decode_name),
and owns the lifetime rules of native handles (NativeHandle).
"""
import contextlib
import errno
import glob
import importlib.util
import os
import threading
import weakref
from typing import Optional

from . import _gpu_libraries
from ._vmafdnn_cffi import ffi, lib
from .errors import BusyError, ClosedError, InvalidArgumentError, InvalidModelError, error_for

__all__ = ["ffi", "lib", "check", "ensure_ort", "find_ort_library", "c_path", "c_name",
           "decode_name", "NativeHandle"]


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


_ort_lock = threading.Lock()
_ort_attempted = False
_ort_source: Optional[str] = None  # the ORT library named or found (None: the loader's)
_cuda_attempted = False


def ensure_ort(device: Optional[str] = None) -> None:
    """Points the C library at ORT once per process, in the documented order:
    VMAFDNN_ORT_LIBRARY (handled in C), then the Python package's library,
    then the loader's search path (in C). When `device` may bind CUDA and that
    ORT is a GPU build, CUDA's libraries from the nvidia-* wheels are loaded
    first, once (_gpu_libraries says why). Thread-safe: a caller returns once
    both are done, never while another thread is half-way."""
    global _ort_attempted, _ort_source, _cuda_attempted
    with _ort_lock:
        if not _ort_attempted:
            try:
                chosen = os.environ.get("VMAFDNN_ORT_LIBRARY")
                _ort_source = chosen or find_ort_library()
                if not chosen and _ort_source is not None and \
                        lib.vmaf_dnn_ort_version() == ffi.NULL:
                    # A failure here is not fatal: the loader-path fallback may
                    # still work, and vmafdnn.available() reports the outcome.
                    lib.vmaf_dnn_load_ort(os.fsencode(_ort_source))
            finally:
                _ort_attempted = True
        if device is not None and not _cuda_attempted and _gpu_libraries.needs_cuda(device):
            _cuda_attempted = True
            try:
                _gpu_libraries.preload(_ort_source)
            except Exception as e:  # a broken wheel layout must not stop the CPU path
                _gpu_libraries.LOADED.append(("", f"preload failed: {e!r}"))


# -- strings ---------------------------------------------------------------------

def _no_nul(data: bytes, what: str, value) -> bytes:
    # cffi passes bytes as char * and C stops at the first NUL: "a.onnx\0x"
    # would silently become "a.onnx".
    if b"\0" in data:
        raise InvalidArgumentError(errno.EINVAL, f"{what} contains a NUL character: {value!r}")
    return data


def c_path(path, what: str = "path") -> bytes:
    """A path (str, bytes or os.PathLike) as the bytes C gets; a NUL in it is
    refused with InvalidArgumentError naming ``what``."""
    return _no_nul(os.fsencode(path), what, path)


def c_name(name, what: str = "name") -> bytes:
    """A name (str) as UTF-8 for C; a NUL in it is refused."""
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a str, got {type(name).__name__}")
    return _no_nul(name.encode("utf-8", "surrogatepass"), what, name)


def decode_name(cdata, what: str) -> str:
    """A name that comes from a model (a slot or feature name) as str. ONNX
    names are UTF-8 by the format's definition, so other bytes mean a
    malformed model: InvalidModelError (EBADMSG) naming the slot and showing
    the bytes escaped, never a bare UnicodeDecodeError."""
    raw = ffi.string(cdata)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidModelError(errno.EBADMSG, f"{what} is not valid UTF-8: {raw!r}") from None


# -- handles ---------------------------------------------------------------------

_LIVE = weakref.WeakSet()  # open handles, for the fork() rule below
_in_call = threading.local()  # .handles: ids of the handles in a call on this thread


class NativeHandle:
    """The lifetime rules shared by Session and Context.

    * Calls are serialised by ``_lock``, held while C runs (the GIL is not).
      Every call reads the handle *under* that lock (``with self._using() as
      h``), so close() cannot free it under a call.
    * close() waits for the call in flight, then frees the handle; every later
      call raises ClosedError. cancel() does not take ``_lock`` (it must reach
      a run in flight): it reads the handle under ``_state_lock``, which close
      also takes before freeing.
    * Copies and pickles are refused: a copy would share the handle and use
      it after the original closed it.
    * After fork() the child may not use a handle opened by the parent: ORT's
      threads do not exist there and its locks may be held by threads that
      did not follow. The child's objects are marked unusable (ClosedError
      naming the fork) and their handles are never closed there.
    """

    _what = "handle"
    _handle = None
    _closed_why = "it is closed"

    def _adopt(self, ptr, close_fn, cancel_fn, keep_alive=None) -> None:
        self._lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._cancel_fn = cancel_fn
        # The destructor holds what the C object borrows (a policy and its
        # strings), so that the garbage collector cannot free those first.
        self._handle = ffi.gc(ptr, lambda p, _borrowed=keep_alive: close_fn(p))
        self._closed_why = None
        _LIVE.add(self)

    def _closed_error(self) -> ClosedError:
        return ClosedError(errno.EBADF, f"{self._what} cannot be used: {self._closed_why}")

    def _not_in_call(self) -> set:
        """The ids of the handles in a call on this thread, this one not among them: Python
        code that runs inside a call on this thread (a signal handler, which the main thread
        runs between bytecodes while the call holds its lock) and calls the same handle would
        wait for that call forever. (No C call runs Python: the library's release of kept
        pictures sets a flag that Context reads after the call.)"""
        handles = getattr(_in_call, "handles", None)
        if handles is None:
            handles = _in_call.handles = set()
        if id(self) in handles:
            raise BusyError(errno.EDEADLK, f"{self._what} is in a call on this thread already "
                                           "(code run inside that call cannot call it again)")
        return handles

    @contextlib.contextmanager
    def _marked(self, handles: set):
        """This handle among `handles` (_not_in_call's) while the block runs."""
        handles.add(id(self))
        try:
            yield
        finally:
            handles.discard(id(self))

    @contextlib.contextmanager
    def _using(self):
        """Holds the call lock and yields the live handle (ClosedError if none)."""
        handles = self._not_in_call()
        with self._lock:
            handle = self._handle
            if handle is None:
                raise self._closed_error()
            with self._marked(handles):
                yield handle

    def _live(self):
        """The handle for a call that needs no lock (ClosedError if none)."""
        handle = self._handle
        if handle is None:
            raise self._closed_error()
        return handle

    def _on_unusable(self) -> None:
        """Hook: drops what refers to the handle beside ``_handle``."""

    def close(self) -> None:
        """Releases the native object now (also done when garbage collected).
        Waits for a call in flight on another thread (call cancel() first to
        make that short); every later call raises ClosedError. Idempotent."""
        if self._handle is None:
            return
        handles = self._not_in_call()
        with self._lock:
            with self._state_lock:
                handle, self._handle = self._handle, None
                if handle is None:
                    return
                self._closed_why = "it is closed"
                self._on_unusable()
            with self._marked(handles):
                ffi.release(handle)

    def cancel(self) -> None:
        """Stops the model run in flight on another thread (that call raises
        RunCancelledError); later calls are not affected. A no-op when nothing
        runs or the object is closed. Safe from any thread."""
        with self._state_lock:
            if self._handle is not None:
                self._cancel_fn(self._handle)

    def _after_fork_in_child(self, parent: int) -> None:
        handle = self._handle
        # Fresh locks: the parent's may have been held by a thread that did
        # not follow into the child.
        self._lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._handle = None
        self._closed_why = (f"it was opened in process {parent}, and this is a child made by "
                            "fork(); open a new one in this process")
        self._on_unusable()
        if handle is not None:
            ffi.gc(handle, None)  # never closed here: see the class comment

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _refuse_copy(self, *args):
        raise TypeError(f"a vmafdnn.{type(self).__name__} cannot be copied or pickled (it "
                        "owns a native handle); open another one instead")

    __copy__ = __deepcopy__ = __reduce__ = __reduce_ex__ = __getstate__ = _refuse_copy


_pid = os.getpid()


def _after_fork_in_child() -> None:
    global _pid
    parent, _pid = _pid, os.getpid()
    for obj in list(_LIVE):
        obj._after_fork_in_child(parent)


def _before_fork() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
