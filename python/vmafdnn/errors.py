"""The exceptions of vmafdnn.

Every failure of the C library arrives as a :class:`DnnError` carrying the
positive ``errno`` and the library's message. Each subclass also inherits the
builtin exception a Python user would expect (``FileNotFoundError`` for a
missing model, ``ValueError`` for a bad argument, ...), so ordinary
``except`` clauses keep working.
"""
import errno as _errno


class DnnError(Exception):
    """Base class: ``.errno`` (positive errno) and ``.message`` (the C message)."""

    def __init__(self, errno: int, message: str):
        # OSError subclasses take (errno, strerror); the others just keep args.
        super().__init__(errno, message)
        self.errno = errno
        self.message = message

    def __str__(self) -> str:
        return self.message


class InvalidArgumentError(DnnError, ValueError):
    """EINVAL: an argument, tensor name, rank or dim is wrong."""


class ModelNotFoundError(DnnError, FileNotFoundError):
    """ENOENT: the model file does not exist."""


class PermissionDeniedError(DnnError, PermissionError):
    """EACCES / EPERM: the file cannot be read, or the model is not allowed."""


class NotARegularFileError(DnnError, IsADirectoryError):
    """EISDIR: the model path is a directory or another non-regular file."""


class ModelTooLargeError(DnnError, ValueError):
    """E2BIG: the model file is over the size cap."""


class InvalidModelError(DnnError, ValueError):
    """EBADMSG: the file is empty or not a valid ONNX model."""


class UnsupportedError(DnnError, ValueError):
    """ENOTSUP: the model or the run needs something this library does not do."""


class RuntimeNotFoundError(DnnError, ImportError):
    """ENOSYS: ONNX Runtime could not be loaded."""

    def __init__(self, errno: int, message: str):
        DnnError.__init__(self, errno, message)
        self.msg = message  # ImportError's own field


class OutputTooSmallError(DnnError, BufferError):
    """ENOSPC: an output buffer is too small (handled inside Session.run)."""


class ReportBufferTooSmallError(DnnError, BufferError):
    """ENOBUFS: a report buffer is too small (handled inside Context.render)."""


class BusyError(DnnError, RuntimeError):
    """EBUSY: the resource is in use (e.g. ORT already loaded from elsewhere)."""


class OutOfMemoryError(DnnError, MemoryError):
    """ENOMEM."""


class RangeError(DnnError, ValueError):
    """ERANGE: a value (e.g. a frame size) is outside the allowed range."""


class RuntimeFailureError(DnnError, OSError):
    """EIO: ONNX Runtime failed to create the session, or reading a model or
    writing a report failed."""


class ModelRuntimeError(DnnError, RuntimeError):
    """ENOEXEC: the model failed while running (ORT refused one of its
    operations on the data given: a Gather index out of range, an impossible
    Reshape, ...). The caller's arguments were valid; the model is at fault."""


class RunTimeoutError(DnnError, TimeoutError):
    """ETIMEDOUT: a run took longer than the policy's ``max_run_ms`` and was
    stopped."""


class RunCancelledError(DnnError, OSError):
    """ECANCELED: a run was stopped by ``cancel()`` (Session, Context or a
    :class:`vmafdnn.Canceller`) from another thread."""


class MemoryBudgetError(DnnError, MemoryError):
    """EDQUOT: the model needs more memory than the policy's
    ``max_memory_bytes`` (at open, at attach or while running)."""


class SymlinkRefusedError(DnnError, OSError):
    """ELOOP: a path (model, sidecar or external data) crosses a symbolic link
    the model directory jail does not allow, or has too many links."""


class PathNotADirectoryError(DnnError, NotADirectoryError):
    """ENOTDIR: a component of a path is not a directory."""


class NameTooLongError(DnnError, OSError):
    """ENAMETOOLONG: a path or name is too long."""


class AlreadyExistsError(DnnError, FileExistsError):
    """EEXIST: a name is already taken (a feature key, a frame that already
    has a value)."""


class ClosedError(DnnError, ValueError):
    """EBADF: the Session or Context was closed (or belongs to the parent of
    a fork()); like I/O on a closed file, every call after close raises it."""


_BY_ERRNO = {
    _errno.EINVAL: InvalidArgumentError,
    _errno.ENOENT: ModelNotFoundError,
    _errno.EACCES: PermissionDeniedError,
    _errno.EPERM: PermissionDeniedError,
    _errno.EISDIR: NotARegularFileError,
    _errno.E2BIG: ModelTooLargeError,
    _errno.EBADMSG: InvalidModelError,
    _errno.ENOTSUP: UnsupportedError,
    _errno.ENOSYS: RuntimeNotFoundError,
    _errno.ENOSPC: OutputTooSmallError,
    _errno.ENOBUFS: ReportBufferTooSmallError,
    _errno.EBUSY: BusyError,
    _errno.ENOMEM: OutOfMemoryError,
    _errno.ERANGE: RangeError,
    _errno.EIO: RuntimeFailureError,
    _errno.ENOEXEC: ModelRuntimeError,
    _errno.ETIMEDOUT: RunTimeoutError,
    _errno.ECANCELED: RunCancelledError,
    _errno.EDQUOT: MemoryBudgetError,
    _errno.ELOOP: SymlinkRefusedError,
    _errno.ENOTDIR: PathNotADirectoryError,
    _errno.ENAMETOOLONG: NameTooLongError,
    _errno.EEXIST: AlreadyExistsError,
    _errno.EBADF: ClosedError,
}


def error_for(errno: int, message: str) -> DnnError:
    """The exception for a positive errno (DnnError itself for unknown codes)."""
    return _BY_ERRNO.get(errno, DnnError)(errno, message)


# -- integers given by a caller or on the command line -----------------------------------

def int_shown(value: int) -> str:
    """An integer as an error message shows it: whole up to 30 digits, else
    by its length (a 5,000-digit value printed whole buries the message,
    and past 4,300 digits Python refuses to print it at all)."""
    if -10 ** 30 < value < 10 ** 30:
        return str(value)
    sign = "-" if value < 0 else ""
    try:
        return f"{sign}a number of {len(str(abs(value)))} digits"
    except ValueError:  # sys.get_int_max_str_digits()
        import sys
        return f"{sign}a number of more than {sys.get_int_max_str_digits()} digits"


def range_text(lo: int, hi: int, shown: str) -> str:
    """The one wording of an integer out of range, for the Python API and
    the command line alike: "must be LO..HI (got VALUE)"."""
    return f"must be {lo}..{hi} (got {shown})"


def check_int(name: str, value, lo: int, hi: int) -> int:
    """``value`` as an int in lo..hi, checked before it reaches C or a
    worker: TypeError for what is not an integer (cffi would cut 1.5 to 1
    and take "4" through int(); a bool is not a count), and
    InvalidArgumentError (EINVAL) "NAME must be LO..HI (got VALUE)" out of
    range, too small or too large alike."""
    import numbers
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if not lo <= value <= hi:
        raise InvalidArgumentError(_errno.EINVAL, f"{name} {range_text(lo, hi, int_shown(value))}")
    return value
