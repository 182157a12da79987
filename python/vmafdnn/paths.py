"""Where the front ends write: every output path checked before any work is
done, and never one of the run's inputs.

Two rules, shared by every writer (the scoring CLI's report and plot, ``vmafdnn
plot``, ``bdrate --plot``, :func:`vmafdnn.score`; written to be what the batch
runner's results file and per-job reports use as well):

* :func:`check_output` -- an output path is usable: not empty, not a
  directory, its directory exists and is writable; ``-`` is stdout only where
  the writer allows it; an existing FIFO (``mkfifo``, ``>(cmd)``) or
  ``/dev/null`` is written in place, any other device is refused.
* :class:`Inputs` -- every file a run reads (clips, features files, each model
  file actually attached with its sidecar, the models a sidecar "requires"
  and the "forms" it names) is registered; :meth:`Inputs.refuse` raises
  :class:`UsageError` when an output is one of them, by identity: (device,
  inode) where the file exists -- hard links and symbolic links included --
  and the resolved path.

And one rule for every file they read:

* :func:`open_input` -- opened first (non-blocking, so a FIFO without a
  writer or a device does not block the open), then checked on the
  descriptor that is read (``fstat``): a regular file, at most
  ``max_bytes``; a FIFO only where the caller allows one. A check by name
  followed by an open could be fooled by a file swapped in between.
  :func:`read_input` reads such a file whole, capped.
"""
import errno as _errno
import os
import stat
from typing import BinaryIO, Iterable, List, Optional, Tuple

__all__ = ["UsageError", "InputFileError", "STDIO", "check_output", "identity",
           "sidecar_path", "Inputs", "open_input", "read_input"]

#: The path that means stdin (inputs) or stdout (outputs that allow it).
STDIO = "-"


class UsageError(ValueError):
    """The arguments cannot work together (both inputs on stdin, raw YUV without
    its geometry, a reference given with no_reference=True, an output that is
    an input, ...)."""


class InputFileError(UsageError):
    """A file a front end will not read: not a regular file (a directory, a
    device, a socket, a FIFO where none is allowed) or larger than its cap.
    ``errno`` says which (EISDIR, EINVAL, EFBIG) and ``filename`` names it."""

    def __init__(self, message: str, errno: int = _errno.EINVAL, filename=None):
        super().__init__(message)
        self.errno = errno
        self.filename = filename



def _text(path) -> str:
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"a path is a str, bytes or os.PathLike, got {type(path).__name__}")
    return os.fsdecode(os.fspath(path))


def file_kind(mode: int) -> str:
    """What a file of st_mode `mode` is, for messages ("a directory", "a FIFO", ...)."""
    return ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
            "a character device" if stat.S_ISCHR(mode) else
            "a block device" if stat.S_ISBLK(mode) else
            "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def _is_devnull(st: os.stat_result) -> bool:
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == null.st_rdev


def check_output(path, what: str, *, stdout_ok: bool = False) -> Optional[str]:
    """Checks that ``what`` (e.g. "report (-o)") can be written to ``path``
    before any work is done; returns the path as text, or None for ``-``
    when ``stdout_ok`` (the caller writes to stdout).

    Refused with UsageError: an empty path, a directory, ``-`` where stdout
    is not allowed, a device other than /dev/null, a socket. Raised as
    OSError (FileNotFoundError, NotADirectoryError, PermissionError): a
    directory that does not exist or cannot be written. An existing regular
    file is replaced; an existing FIFO or /dev/null is written in place (a
    FIFO exists only because someone made it to receive a stream).
    """
    text = _text(path)
    if text == "":
        raise UsageError(f"the {what} path is empty: give a file name")
    if "\0" in text:
        raise UsageError(f"the {what} path {text!r} contains a NUL character")
    if text == STDIO:
        if stdout_ok:
            return None
        raise UsageError(f"the {what} cannot go to stdout ('-'): give a file name")
    try:
        st = os.stat(text)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise NotADirectoryError(f"cannot write the {what} {text}: a component of its "
                                 "directory is not a directory") from None
    except OSError as e:
        raise type(e)(f"cannot write the {what} {text}: {e.strerror}") from None
    if st is not None:
        if stat.S_ISFIFO(st.st_mode) or _is_devnull(st):
            return text
        if stat.S_ISDIR(st.st_mode):
            raise UsageError(f"the {what} {text} is a directory: give a file name (inside it, "
                             "say)")
        if not stat.S_ISREG(st.st_mode):
            hint = " or '-' (stdout)" if stdout_ok else ""
            raise UsageError(f"the {what} {text} is {file_kind(st.st_mode)}: give a regular file, "
                             f"a FIFO, /dev/null{hint}")
    # A new or replaced regular file: created beside its (resolved) name.
    directory = os.path.dirname(os.path.realpath(text)) or "."
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"cannot write the {what} {text}: directory {directory} does "
                                "not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot write the {what} {text}: directory {directory} is not "
                              "writable")
    return text


def _size_text(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n} bytes"


def open_input(path, what: str, *, fifo_ok: bool = False, wait_for_writer: bool = True,
               max_bytes: Optional[int] = None, cap_name: str = "",
               hint: str = "") -> BinaryIO:
    """Opens the input ``what`` (e.g. "report") at ``path`` for reading, as a
    binary file object named ``path``.

    The open comes first, non-blocking (a FIFO without a writer, a device
    that waits, do not block it), and the checks are made on that
    descriptor (``fstat``), so what is checked is what is read: a regular
    file of at most ``max_bytes`` (None: any size), or, with ``fifo_ok``, a
    FIFO; with ``wait_for_writer`` this waits for the FIFO's writer to write
    (or come and go), as a plain open() and read would. Anything else
    raises :class:`InputFileError` (``hint`` appended to its message); an
    open that fails raises the OSError, its message naming the file."""
    name = _text(path)
    if name == "" or "\0" in name:
        raise InputFileError(f"the {what} path {name!r} is empty or contains a NUL character",
                             _errno.EINVAL, name)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) |
                     getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise _located(e, f"cannot read the {what} {name}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            if max_bytes is not None and st.st_size > max_bytes:
                cap = f" ({cap_name})" if cap_name else ""
                raise InputFileError(f"the {what} {name} is larger than {_size_text(max_bytes)}"
                                     f"{cap}: {st.st_size} bytes", _errno.EFBIG, name)
            os.set_blocking(fd, True)
        elif stat.S_ISFIFO(st.st_mode) and fifo_ok:
            if wait_for_writer:
                _wait_for_writer(fd)
            os.set_blocking(fd, True)
        else:
            kind = file_kind(st.st_mode)
            allowed = "a regular file or a FIFO" if fifo_ok else "a regular file"
            raise InputFileError(f"the {what} {name} is {kind}, not {allowed}"
                                 f"{': ' + hint if hint else ''}",
                                 _errno.EISDIR if stat.S_ISDIR(st.st_mode) else _errno.EINVAL,
                                 name)
        f = open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise
    try:
        f.raw.name = name
    except AttributeError:
        pass
    return f


def _wait_for_writer(fd: int) -> None:
    """Waits until the FIFO open (non-blocking) on ``fd`` has bytes to read,
    or had a writer that has gone: what a blocking open and a first read
    would wait for. Read at once, a FIFO whose writer has not opened it yet
    reads as empty (end of file); opened again blocking, a writer that came,
    wrote everything and went before the second open would be waited for,
    for ever, with its bytes in the pipe. poll() tells both apart (Linux
    reports POLLHUP only for a writer that came after this open)."""
    import select
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while not poller.poll(None):
        pass


def _located(e: OSError, message: str) -> OSError:
    """An OSError of ``e``'s type and errno whose text is ``message``."""
    err = type(e)(message)
    err.errno = e.errno
    return err


def read_input(path, what: str, max_bytes: int, *, fifo_ok: bool = False,
               cap_name: str = "") -> bytes:
    """The bytes of the input ``what`` at ``path`` (see :func:`open_input`),
    at most ``max_bytes``: a larger file (or stream) raises
    :class:`InputFileError` (EFBIG) naming it, before or after reading
    ``max_bytes`` + 1 bytes."""
    with open_input(path, what, fifo_ok=fifo_ok, max_bytes=max_bytes,
                    cap_name=cap_name) as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        cap = f" ({cap_name})" if cap_name else ""
        raise InputFileError(f"the {what} {_text(path)} is larger than {_size_text(max_bytes)}"
                             f"{cap}", _errno.EFBIG, _text(path))
    return data


def utf8_text(data: bytes, name: str, error: type) -> str:
    """A text file's bytes as text: a UTF-8 BOM dropped, anything that is not
    UTF-8 raised as ``error("NAME:LINE: not UTF-8 text (why)")``, LINE that
    of the first bad byte."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise error(f"{name}:{line}: not UTF-8 text ({e.reason})") from None


def identity(path) -> Tuple[tuple, ...]:
    """What names a file: ("inode", dev, ino) of an existing regular file,
    FIFO or directory (symbolic links followed, so every hard link and link
    to it shares it) and ("path", resolved path); () for ``-``, devices
    (/dev/null, a terminal) and what cannot be named."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        try:  # an open file object: what its descriptor names
            st = os.fstat(path.fileno())
        except (AttributeError, OSError, ValueError, TypeError):
            return ()
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            return ()
        return (("inode", st.st_dev, st.st_ino),)
    text = _text(path)
    if text in ("", STDIO) or "\0" in text:
        return ()
    keys: List[tuple] = []
    try:
        st = os.stat(text)
    except (OSError, ValueError):
        st = None
    if st is not None:
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) or stat.S_ISSOCK(st.st_mode):
            return ()
        keys.append(("inode", st.st_dev, st.st_ino))
    try:
        keys.append(("path", os.path.realpath(text)))
    except (OSError, ValueError):
        pass
    return tuple(keys)


def sidecar_path(model_path) -> str:
    """The sidecar the C library reads beside a model: ``m.onnx`` -> ``m.json``
    (any other name gets ".json" appended; vdnn_sidecar_path)."""
    text = _text(model_path)
    base = os.path.basename(text)
    stem = text[:-5] if len(base) > 5 and text.endswith(".onnx") else text
    return stem + ".json"


def std_stream(written: bool):
    """The binary stream of ``-``: stdout's (``written``) or stdin's; OSError (EBADF)
    naming it where the process started with that descriptor closed (Python then has
    None for it, and ``.buffer`` was an AttributeError reported as an internal error)."""
    import sys
    stream = sys.stdout if written else sys.stdin
    if stream is None:
        name = "standard output" if written else "standard input"
        raise OSError(_errno.EBADF, f"{name} is closed: '-' cannot "
                                    f"{'be written' if written else 'be read'}")
    return stream.buffer


def _stdio(path, written: bool):
    """``sys.stdout`` (``written``) or ``sys.stdin`` for ``-``, else ``path``."""
    if isinstance(path, (str, bytes)) and os.fsdecode(path) == STDIO:
        import sys
        return sys.stdout if written else sys.stdin
    return path


class Inputs:
    """Every file a run reads, by role, to refuse an output that is one of them."""

    def __init__(self, inputs: Optional[dict] = None):
        self._items: List[Tuple[str, str, Tuple[tuple, ...]]] = []
        for role, path in (inputs or {}).items():
            self.add(role, path)

    def add(self, role: str, path, *, written: bool = False) -> None:
        """Registers ``path`` as the input ``role`` (ignored: None, iterables
        of frames, devices, terminals, what cannot be named). ``-`` is what
        stdin reads, or with ``written`` (another output registered to be
        compared with the next) what stdout writes to: a regular file or FIFO
        behind them counts by its identity."""
        if path is None:
            return
        keys = identity(_stdio(path, written))
        if keys:
            text = _text(path) if isinstance(path, (str, bytes, os.PathLike)) else \
                str(getattr(path, "name", role))
            if text == STDIO:
                text = "standard output" if written else "standard input"
            self._items.append((role, text, keys))

    def add_all(self, inputs: dict) -> None:
        """Registers {role: path} (None values skipped)."""
        for role, path in inputs.items():
            self.add(role, path)

    def add_model(self, path, form: Optional[str] = None, role: str = "model") -> None:
        """Registers a model file, its sidecar and the form that scores in its
        place (with the form's sidecar)."""
        self.add(f"{role} {_text(path)}", path)
        self.add(f"sidecar of {role} {_text(path)}", sidecar_path(path))
        if form:
            self.add(f"form {_text(form)} of {role} {_text(path)}", form)
            self.add(f"sidecar of form {_text(form)} of {role} {_text(path)}",
                     sidecar_path(form))

    def add_models(self, infos: Iterable) -> None:
        """Registers every attached model (:attr:`vmafdnn.Context.models`)."""
        for info in infos:
            self.add_model(info.path, getattr(info, "form", None))

    def find(self, output) -> Optional[Tuple[str, str]]:
        """(role, path) of the input that ``output`` names, else None."""
        if output is None:
            return None
        # "-" is stdout: `vmafdnn -r ref.y4m ... -o - >> ref.y4m` appended the
        # report to the reference.
        keys = set(identity(_stdio(output, True)))
        if not keys:
            return None
        for role, text, theirs in self._items:
            if keys.intersection(theirs):
                return role, text
        return None

    def refuse(self, output, what: str) -> None:
        """Raises UsageError when writing ``what`` to ``output`` would replace
        one of the inputs."""
        found = self.find(output)
        if found is not None:
            role, text = found
            named = role if text in role else f"{role} ({text})"
            shown = _text(output)
            if shown == STDIO:
                shown = "- (standard output)"
            raise UsageError(f"the {what} {shown} is also the {named}; writing it "
                             "would destroy that: choose another path")
