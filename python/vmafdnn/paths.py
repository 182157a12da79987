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
"""
import os
import stat
from typing import Iterable, List, Optional, Tuple

__all__ = ["UsageError", "STDIO", "check_output", "identity", "sidecar_path", "Inputs"]

#: The path that means stdin (inputs) or stdout (outputs that allow it).
STDIO = "-"


class UsageError(ValueError):
    """The arguments cannot work together (both inputs on stdin, raw YUV without
    its geometry, a reference given with no_reference=True, an output that is
    an input, ...)."""


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


class Inputs:
    """Every file a run reads, by role, to refuse an output that is one of them."""

    def __init__(self, inputs: Optional[dict] = None):
        self._items: List[Tuple[str, str, Tuple[tuple, ...]]] = []
        for role, path in (inputs or {}).items():
            self.add(role, path)

    def add(self, role: str, path) -> None:
        """Registers ``path`` (ignored: None, ``-``, file objects, iterables of
        frames, devices) as the input ``role``."""
        if path is None:
            return
        keys = identity(path)
        if keys:
            text = _text(path) if isinstance(path, (str, bytes, os.PathLike)) else \
                str(getattr(path, "name", role))
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
        keys = set(identity(output))
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
            raise UsageError(f"the {what} {_text(output)} is also the {named}; writing it "
                             "would destroy that: choose another path")
