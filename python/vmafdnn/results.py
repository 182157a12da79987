"""The results store of ``vmafdnn batch``: the results file, its resume
journal and the job key (docs/batch.md "Results" and "Faults, resume and
progress"). This module is the only writer of results files and journals;
it reads job lists through :mod:`vmafdnn.jobs` and knows nothing of the
runners.

Rules every writer here follows (docs/security.md, "Front ends"):

- JSON (results ``.jsonl`` and the journal) is strict JSON: a NaN or an
  infinity is written as ``null``, as the C report writers do.
- CSV: the cell rule of the C report writer (csrc/output.h, "CSV cells"):
  a text cell -- a column name, a label, a path, a model list, an error --
  whose first character is ``=``, ``+``, ``-``, ``@``, TAB or CR gets a
  single quote (``'``) put before it, unless the whole cell is a decimal
  number (``-5``, ``+1.5e3``), so that no spreadsheet runs it as a formula
  (OWASP's "CSV injection" advice). Numbers the writer formats itself are
  never changed. Two columns whose names are equal after that are refused.
- The job key covers everything that decides a row: see :func:`job_key`.
"""
import csv
import errno
import hashlib
import io
import json
import math
import os
import re
import stat
import tempfile
from collections import OrderedDict
from typing import Dict, List, Optional, Sequence

from .jobs import JOB_FIELDS, POOL_SUFFIXES, labels as _labels

try:
    import fcntl
except ImportError:  # not POSIX: no lock
    fcntl = None

__all__ = ["read_results", "write_results", "job_key", "key_files", "csv_text", "json_value",
           "Journal", "KEY_VERSION", "MAX_RESULTS_BYTES", "ResultsFileError", "Hasher",
           "done_rows", "format_of", "good_rows", "journal_path", "keep_good_rows",
           "pyarrow_module", "with_labels"]

#: Result columns the runner writes (labels go first, the scores after them).
_RESULT_HEAD = ("reference", "distorted", "models", "frames", "width", "height", "fps")
_RESULT_TAIL = ("attached_ep", "file_kbps", "load_s", "score_s", "total_s", "worker",
                "attempts", "error", "job_key")

#: Bumped when the job key covers more: rows of older keys are scored again
#: once (a failure then keeps the older row, see keep_good_rows).
#: 3: device_index, the ONNX Runtime version, the EP the device resolves to, Ray GPU actors.
#: 4: libvmafdnn's version (its own operators' kernels score the kernels forms).
#: 5: the digest of the library's sources beside its version (a rebuild within one version).
KEY_VERSION = 5

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def csv_text(text: str) -> str:
    """A text cell as CSV writers here write it: a single quote before a
    cell a spreadsheet would run as a formula (see the module docstring;
    the same rule as csrc/output.c's csv_text_cell)."""
    if text.startswith(_FORMULA_START) and not _DECIMAL.fullmatch(text):
        return "'" + text
    return text


def json_value(value):
    """``value`` with every non-finite float (also inside lists and dicts)
    replaced by None: JSON has no NaN or infinity."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    return value


def json_line(row: dict) -> str:
    return json.dumps(json_value(row), allow_nan=False) + "\n"


def _format_by_name(path: str) -> Optional[str]:
    ext = os.path.splitext(path)[1].lower()
    if ext == ".parquet":
        return "parquet"
    if ext in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if ext == ".csv":
        return "csv"
    return None


def format_of(path: str) -> str:
    """The results format the name says. A symbolic link (any step of the path) to a file
    whose own name says another format is refused: the batch would write one format into a
    file named for the other, which every other reader then misreads."""
    fmt = _format_by_name(path)
    if fmt is None:
        raise ValueError(f"results file {path}: unknown format; use .parquet, .csv or .jsonl")
    real = os.path.realpath(path)
    real_fmt = _format_by_name(real)
    if real_fmt is not None and real_fmt != fmt:
        raise ValueError(f"results file {path} is a link to {real}: its name says {fmt}, the "
                         f"file's says {real_fmt}; name the file itself")
    return fmt


#: The largest results file read back (resume, ``vmafdnn bdrate``): a
#: million rows of 1 KiB. Larger, or not a regular file (a FIFO, /dev/zero
#: through a link), is refused before it is read.
MAX_RESULTS_BYTES = 1 << 30

#: The largest CSV cell read back (csv's own limit, 128 KiB, raised: a long
#: error message or model list is not a malformed file).
_MAX_CSV_CELL = 1 << 20


class ResultsFileError(ValueError):
    """A results file (or journal) that cannot be read back as written; the
    message names the file and, where known, the line."""


def read_results(path) -> List[dict]:
    """The rows of a results file (.parquet, .csv, .jsonl): a regular file of
    at most MAX_RESULTS_BYTES, opened and then checked
    (:func:`vmafdnn.paths.open_input`). CSV cells are strings, as written
    (numbers in Python's round-trip form). A file that cannot be read as
    its format raises :class:`ResultsFileError` naming it and the line:
    bytes that are not UTF-8, a NUL, a malformed CSV row, invalid JSON
    (nesting past the parser included), a row that is not an object."""
    from .paths import open_input, utf8_text
    path = os.fspath(path)
    fmt = format_of(path)
    with open_input(path, "results file", max_bytes=MAX_RESULTS_BYTES,
                    cap_name="MAX_RESULTS_BYTES") as f:
        if fmt == "parquet":
            pa = pyarrow_module("read parquet")
            try:
                return pa.parquet.read_table(f).to_pylist()
            except (pa.ArrowException, OSError, ValueError) as e:
                raise ResultsFileError(f"{path}: not a Parquet results file ({e})") from None
        data = f.read(MAX_RESULTS_BYTES + 1)
    if len(data) > MAX_RESULTS_BYTES:
        raise ResultsFileError(f"{path}: larger than {MAX_RESULTS_BYTES >> 20} MiB "
                               "(MAX_RESULTS_BYTES)")
    text = utf8_text(data, path, ResultsFileError)
    if "\x00" in text:
        line = text[:text.index("\x00")].count("\n") + 1
        raise ResultsFileError(f"{path}:{line}: a NUL character: not a results file")
    if fmt == "csv":
        return _csv_rows(path, text)
    return list(_jsonl_rows(path, text))


def _csv_rows(path: str, text: str) -> List[dict]:
    # csv's cell limit is one for the process: raised (never lowered, never
    # set back, so threads parsing at once cannot leave it lowered).
    if csv.field_size_limit() < _MAX_CSV_CELL:
        csv.field_size_limit(_MAX_CSV_CELL)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return []
        if len(set(header)) != len(header):
            raise ResultsFileError(f"{path}:1: a column name is given twice in the header")
        rows = []
        for cells in reader:
            if not cells:
                continue
            if len(cells) > len(header):
                raise ResultsFileError(f"{path}:{reader.line_num}: {len(cells)} cells but "
                                       f"{len(header)} columns in the header")
            rows.append(dict(zip(header, cells + [""] * (len(header) - len(cells)))))
        return rows
    except csv.Error as e:
        raise ResultsFileError(f"{path}:{reader.line_num}: malformed CSV: {e}") from None


def _jsonl_rows(path: str, text: str):
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)  # NaN too: files written before item 7 hold it
        except RecursionError:
            raise ResultsFileError(f"{path}:{n}: invalid JSON: nested too deeply") from None
        except ValueError as e:
            raise ResultsFileError(f"{path}:{n}: invalid JSON: {e}") from None
        if not isinstance(row, dict):
            raise ResultsFileError(f"{path}:{n}: a row is a JSON object")
        yield row


def pyarrow_module(what: str):
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise RuntimeError(f"to {what} files install pyarrow (pip install 'vmafdnn[parquet]')"
                           ) from None
    return pyarrow


def _columns(rows: Sequence[dict]) -> List[str]:
    seen = OrderedDict()
    for row in rows:
        for key in row:
            seen[key] = None
    head = [c for c in seen if c not in _RESULT_HEAD and c not in _RESULT_TAIL
            and not is_score(c, seen)]
    scores = [c for c in seen if is_score(c, seen) and c not in _RESULT_TAIL]
    return head + [c for c in _RESULT_HEAD if c in seen] + scores + \
        [c for c in _RESULT_TAIL if c in seen] + (["report"] if "report" in seen and
                                                  "report" not in head else [])


def is_score(column: str, seen) -> bool:
    """A pooled-score column: <key> with its <key>_min beside it, or one of those."""
    for suffix in POOL_SUFFIXES.values():
        if suffix and column.endswith(suffix) and column[:-len(suffix)] + "_min" in seen:
            return True
    return column + "_min" in seen and column + "_harmonic_mean" in seen


def _umask() -> int:
    """The process umask, read without setting it (os.umask would change it
    for every thread for a moment); 0o022 where /proc cannot tell."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def write_results(rows: Sequence[dict], path) -> None:
    """Writes ``rows`` to ``path`` (.parquet, .csv or .jsonl) atomically and
    durably: a reader sees the old file or the new one, and the new one is
    on disk (fsync of the file, then of its folder) when this returns, before
    a batch removes its journal. As the C report writer does, a
    symlink is written through (its target replaced, the link kept) and an
    existing file keeps its mode."""
    fmt = format_of(os.fspath(path))
    path = os.path.realpath(path)
    columns = _columns(rows)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()  # what a plain open() would give
    # A unique name beside the target: two batch() calls in one process may
    # aim at the same results file.
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp",
                               dir=os.path.dirname(path))
    try:
        os.close(fd)
        os.chmod(tmp, mode)
        if fmt == "parquet":
            pa = pyarrow_module("write parquet")
            data = {}
            for c in columns:
                values = [row.get(c) for row in rows]
                kinds = {type(v) for v in values if v is not None}
                if len(kinds) > 1 and not kinds <= {int, float}:
                    values = [None if v is None else str(v) for v in values]
                elif kinds == {int, float}:
                    values = [None if v is None else float(v) for v in values]
                data[c] = values
            pa.parquet.write_table(pa.table(data), tmp)
        else:
            with open(tmp, "w", newline="", encoding="utf-8") as f:
                if fmt == "csv":
                    w = csv.writer(f)
                    w.writerow(_csv_header(columns))
                    for row in rows:
                        w.writerow([_csv_cell(row.get(k)) for k in columns])
                else:
                    for row in rows:
                        f.write(json_line({k: row.get(k) for k in columns}))
        # On disk before the rename, and the rename on disk before the journal
        # (the only other copy of the rows) is removed, as the C writer does:
        # a crash right after must not leave an empty or partial results file.
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _sync_folder(os.path.dirname(path))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _sync_folder(folder: str) -> None:
    try:
        fd = os.open(folder or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # a file system that cannot sync a folder
    finally:
        os.close(fd)


def _csv_header(columns: List[str]) -> List[str]:
    names = [csv_text(c) for c in columns]
    seen: Dict[str, str] = {}
    for name, column in zip(names, columns):
        if name in seen:
            raise ValueError(f"results: columns {seen[name]!r} and {column!r} would both be "
                             f"written as {name!r} (a formula-like name is quoted): rename one")
        seen[name] = column
    return names


def _csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    return csv_text(str(value))


def journal_path(output: str) -> str:
    """The journal of the results file ``output``: beside the file the name
    resolves to (symbolic links, to the file or to a folder on the way, and
    ".." followed as open() would; a dangling link names the file it will
    create), so every name of one results file shares one journal and its
    lock. A hard link is a name of its own: results are replaced by a
    rename of the name given, which leaves other links with the old rows."""
    return os.path.realpath(output) + ".partial.jsonl"


def good_rows(output: Optional[str], journal: Optional["Journal"] = None) -> List[dict]:
    """The successful rows of earlier runs, in the results file and its
    journal (``journal``, the one this run holds, else read by name): one
    per job key (the journal's, newer, where both have one), in the order
    they were first found. A results file that is not a regular file (a
    FIFO named as the output) is not read back."""
    from .paths import InputFileError
    if output is None:
        return []
    found = []
    try:
        found += read_results(output)
    except FileNotFoundError:
        pass
    except InputFileError as e:
        if e.errno == errno.EFBIG:
            raise ResultsFileError(f"results file {output} cannot be read back to resume ({e}); "
                                   "move it away or choose another -o") from None
    except (ValueError, OSError) as e:
        raise ResultsFileError(f"results file {output} cannot be read back to resume ({e}); "
                               "move it away or choose another -o") from None
    data = journal.read() if journal is not None else _read_journal(journal_path(output))
    for line in data.split(b"\n"):
        try:
            found.append(json.loads(line.decode("utf-8", "replace")))
        except (ValueError, RecursionError):
            pass  # the line a killed run was writing
    good: Dict[str, dict] = {}
    for row in found:
        key = row.get("job_key") if isinstance(row, dict) else None
        if isinstance(key, str) and key and not row.get("error"):
            good[key] = row
    return list(good.values())


def _read_journal(path: str) -> bytes:
    """A journal's bytes, read by name: b"" when it is missing or not a
    regular file."""
    from .paths import InputFileError, read_input
    try:
        return read_input(path, "results journal", MAX_RESULTS_BYTES,
                          cap_name="MAX_RESULTS_BYTES")
    except FileNotFoundError:
        return b""
    except InputFileError as e:
        if e.errno == errno.EFBIG:
            raise ResultsFileError(str(e)) from None
        return b""


def done_rows(good: List[dict], reports: Optional[str]) -> Dict[str, dict]:
    """The earlier successful rows that need no new work, by job key: with
    their report file when reports are asked for."""
    return {row["job_key"]: row for row in good
            if not reports or (isinstance(row.get("report"), str) and row["report"]
                               and os.path.isfile(row["report"]))}


def _job_models(job: dict, options: dict) -> str:
    """The ``models`` cell a worker writes for the job."""
    from . import scoring
    try:
        models = scoring.resolve_models(job["models"] or options["models"], job["reference"] is None)
    except Exception:
        return ";".join(job["models"] or options["models"] or [])
    return ";".join(os.fspath(m) for m in models)


def keep_good_rows(result, jobs: List[dict], ran: List[int], good: List[dict],
                    options: dict, on_event) -> None:
    """A failure never replaces a success: each job that failed now and
    whose earlier row succeeded gets that row back (with the job's current
    labels, as a skipped job), its error going to ``result.kept``.

    The earlier row is the one of the same job key (a job run again for a
    missing report), else, since a key changes with its inputs (a clip
    moved away has no size or mtime), one of a job no longer in the list
    (its key is no current job's) that scored the same reference, distorted
    clip and models: paired in job-list order, the rows of the same labels
    first, so that two jobs of one pair (other offsets, say) each find
    their own row when the list kept its order."""
    if not good:
        return
    by_key = {row["job_key"]: row for row in good}
    current = {job["job_key"] for job in jobs}
    pool = [row for row in good if row["job_key"] not in current]

    def ident(reference, distorted, models):
        return (reference or None, os.fspath(distorted) if distorted else None, models or "")

    def labels_match(row, job) -> bool:
        # A CSV results file gives a formula-like label back with its quote mark.
        return all(_label_text(row.get(k)) in (_label_text(v), csv_text(_label_text(v)))
                   for k, v in _labels(job).items() if k != "job_key")

    pairs: Dict[int, dict] = {}
    unkeyed = [i for i in ran if jobs[i]["job_key"] not in by_key]
    idents = {i: ident(jobs[i]["reference"], jobs[i]["distorted"],
                       _job_models(jobs[i], options)) for i in unkeyed}
    taken = set()
    for same_labels in (True, False):
        for i in unkeyed:
            if i in pairs:
                continue
            for n, row in enumerate(pool):
                if n in taken or ident(row.get("reference"), row.get("distorted"),
                                       row.get("models")) != idents[i]:
                    continue
                if same_labels and not labels_match(row, jobs[i]):
                    continue
                pairs[i] = row
                taken.add(n)
                break
    for i in ran:
        row = result[i]
        if row is None or not row.get("error"):
            continue
        earlier = by_key.get(jobs[i]["job_key"]) or pairs.get(i)
        if earlier is None:
            continue
        result.kept[i] = row["error"]
        result[i] = with_labels(earlier, jobs[i])
        if on_event:
            on_event("kept", i, {"error": row["error"], "row": result[i]})


def _label_text(value) -> str:
    return "" if value is None else str(value)




def with_labels(row: dict, job: dict) -> dict:
    """The row with the job's current labels (they are not part of the key:
    relabelling a done job needs no new scoring)."""
    labels = _labels(job)
    rest = {k: v for k, v in row.items() if k not in labels}
    return {**labels, **rest}


class Journal:
    """``<output>.partial.jsonl``: finished rows appended (strict JSON, one
    a line, each in one write) as jobs finish, read back by a re-run; and
    the lock that keeps a second batch off the same results file.

    Opening it takes an exclusive lock (``flock``) on it for the life of the
    run: a second batch aimed at the same results file (another process or
    thread) gets :class:`vmafdnn.BusyError` (EBUSY) instead of running every
    job again and replacing, or removing, what the first wrote. It is the
    batch's own file: a symbolic link, a FIFO or a device there is refused
    (a link could aim the rows at any file of the user's). A line a killed
    run left unfinished is ended before the first new row, so that row is
    read back. It lies beside the real results file (``journal_path``):
    every name of one results file, a symbolic link to it or to its folder
    included, gets the same journal and lock."""

    def __init__(self, output: str):
        self.output = output
        self.path = journal_path(output)
        self._fd = None
        for _ in range(16):
            fd = _open_journal(self.path)
            try:
                st = self._lock(fd)
            except BaseException:
                os.close(fd)
                raise
            if st is not None:
                break
            os.close(fd)  # removed by the batch that held it as we opened it: again
        else:
            raise self._busy()
        self._fd = fd
        if st.st_size and os.pread(fd, 1, st.st_size - 1) != b"\n":
            os.write(fd, b"\n")

    def __reduce__(self):
        # Its descriptor and lock belong to this process: a copy elsewhere
        # would write to whatever that descriptor number is there.
        raise TypeError("a results Journal holds this process's lock and descriptor: it "
                        "cannot be copied or pickled")

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _busy(self):
        from .errors import BusyError
        return BusyError(errno.EBUSY, f"another vmafdnn batch is writing the results file "
                         f"{self.output} (its journal {self.path} is locked): wait for it to "
                         "finish, or choose another -o")

    def _lock(self, fd: int):
        """Locks ``fd``; its fstat, or None when the name no longer names it."""
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            from .paths import InputFileError, file_kind
            raise InputFileError(f"the results journal {self.path} is {file_kind(st.st_mode)}: "
                                 "it is the batch's own file; remove it", errno.EINVAL,
                                 self.path)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise self._busy() from None
        try:
            now = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return None
        return st if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) else None

    def read(self) -> bytes:
        """What the journal holds (rows of earlier runs), at most MAX_RESULTS_BYTES."""
        size = os.fstat(self._fd).st_size
        if size > MAX_RESULTS_BYTES:
            raise ResultsFileError(f"the results journal {self.path} is larger than "
                                   f"{MAX_RESULTS_BYTES >> 20} MiB (MAX_RESULTS_BYTES): move "
                                   "it away")
        chunks, at = [], 0
        while at < size:
            chunk = os.pread(self._fd, size - at, at)
            if not chunk:
                break
            chunks.append(chunk)
            at += len(chunk)
        return b"".join(chunks)

    def append(self, row: dict) -> None:
        data = json_line(row).encode("utf-8")
        while data:
            data = data[os.write(self._fd, data):]

    def remove(self) -> None:
        """Removes the journal (its rows are in the results file), still locked."""
        if self._fd is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def close(self) -> None:
        """Releases the lock; an empty journal (no job finished) is removed first."""
        if self._fd is None:
            return
        try:
            if os.fstat(self._fd).st_size == 0:
                self.remove()
        finally:
            os.close(self._fd)
            self._fd = None


def _open_journal(path: str) -> int:
    flags = (os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK |
             getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        return os.open(path, flags, 0o666)
    except OSError as e:
        if e.errno == errno.ELOOP:
            from .paths import InputFileError
            raise InputFileError(f"the results journal {path} is a symbolic link: it is the "
                                 "batch's own file; remove the link", errno.ELOOP,
                                 path) from None
        err = type(e)(f"cannot open the results journal {path}: {e.strerror}")
        err.errno = e.errno
        raise err from None


def remove_journal(output: str) -> None:
    try:
        os.unlink(journal_path(output))
    except FileNotFoundError:
        pass


# -- what identifies a job ---------------------------------------------------------------

def _file_identity(path: Optional[str]):
    """An input's identity: absolute path, size and modification time (ns).
    Clips are not hashed (they are large and a re-encode changes both);
    a clip touched without a change is scored again, never the reverse."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return [os.path.abspath(path), None]
    return [os.path.abspath(path), st.st_size, st.st_mtime_ns]


_SIDECAR_MAX_BYTES = 1 << 20  # VDNN_SIDECAR_MAX_BYTES
_HASH_CHUNK = 1 << 20


class Hasher:
    """Content digests of model files, once per file (and size, mtime,
    inode) per batch."""

    def __init__(self):
        self._cache: Dict[tuple, str] = {}
        self.models: Dict[str, list] = {}  # model -> its identity, once per batch
        self.runs: Dict[tuple, dict] = {}  # run options -> what they resolve to, once per batch

    def digest(self, path: str):
        """The file's SHA-256, read from the descriptor that was checked (a
        regular file: a FIFO swapped in would block the batch), else why not."""
        from .paths import InputFileError, open_input
        try:
            f = open_input(path, "model file")
        except InputFileError:
            return "not a regular file"
        except OSError as e:
            return f"missing ({os.strerror(e.errno)})" if e.errno == errno.ENOENT else \
                f"unreadable ({os.strerror(e.errno) if e.errno else e})"
        with f:
            st = os.fstat(f.fileno())
            tag = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            found = self._cache.get(tag)
            if found is None:
                h = hashlib.sha256()
                try:
                    while True:
                        chunk = f.read(_HASH_CHUNK)
                        if not chunk:
                            break
                        h.update(chunk)
                except OSError as e:
                    return f"unreadable ({e.strerror})"
                found = self._cache[tag] = h.hexdigest()
        return found


def read_sidecar(sidecar: str) -> Optional[dict]:
    """A sidecar's JSON object, read within the C library's bounds (a regular
    file of at most VDNN_SIDECAR_MAX_BYTES: a FIFO or an endless file is
    refused, never waited on); None where it cannot be read or holds no
    object (whoever opens the model with it reports why)."""
    from .paths import read_input
    try:
        data = json.loads(read_input(sidecar, "sidecar", _SIDECAR_MAX_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError):  # InputFileError is a ValueError
        return None
    return data if isinstance(data, dict) else None


def _sidecar_refs(sidecar: str) -> List[str]:
    """The model files a sidecar names ("requires", the "forms" values),
    relative to its folder as the C library reads them (csrc/sidecar.h);
    [] when it cannot be read (the worker reports why)."""
    data = read_sidecar(sidecar)
    if data is None:
        return []
    refs = []
    requires = data.get("requires")
    if isinstance(requires, list):
        refs += [r for r in requires if isinstance(r, str) and r]
    forms = data.get("forms")
    if isinstance(forms, dict):
        for _, v in sorted(forms.items()):  # a file, or a list of them in order of preference
            refs += [f for f in (v if isinstance(v, list) else [v]) if isinstance(f, str) and f]
    folder = os.path.dirname(sidecar)
    return [os.path.normpath(os.path.join(folder, r)) for r in refs]


def _model_identity(model: str, hasher: Hasher):
    """Every file the model stands for, by content: the model, its sidecar,
    and, following the sidecars, the models it "requires" and its "forms"
    (the file that really scores on an EP), with their sidecars."""
    found = hasher.models.get(model)
    if found is None:
        found = hasher.models[model] = _model_files(model, hasher)
    return found


def _model_files(model: str, hasher: Hasher):
    from . import models as _builtin
    try:
        path = _builtin.resolve(model)
    except (OSError, ValueError):
        return [model, "unresolved"]  # fails in the worker, with the library's message
    files = []
    todo, seen = [os.path.abspath(path)], set()
    while todo and len(seen) < 256:
        path = todo.pop(0)
        if path in seen:
            continue
        seen.add(path)
        sidecar = os.path.splitext(path)[0] + ".json"
        files.append([path, hasher.digest(path)])
        if os.path.exists(sidecar):
            files.append([sidecar, hasher.digest(sidecar)])
            todo += _sidecar_refs(sidecar)
    return [model, files]


def key_files(model: str, hasher: Optional[Hasher] = None) -> List[str]:
    """The files the job key covers for ``model`` (real paths): a worker
    checks that every file the library really loaded is one of them."""
    identity = _model_identity(os.fspath(model), hasher or Hasher())[1]
    if not isinstance(identity, list):
        return []
    return [os.path.realpath(path) for path, _ in identity]


def _forms_wanted():
    """Which forms the library scores with (VMAFDNN_MODEL_FORMS, read the way
    csrc/tiny_model.c reads it): True for the attached EP's, False for none,
    else the EP name whose forms every model takes."""
    value = os.environ.get("VMAFDNN_MODEL_FORMS", "").strip(" \t")
    if value.lower() in _FORMS_OFF:
        return False
    if value.lower() in _FORMS_BY_EP:
        return True
    from . import names
    try:
        return names.name("ep", names.value("ep", value))  # one spelling per EP
    except ValueError:
        return value  # the library refuses it at the attach


#: VMAFDNN_MODEL_FORMS values that keep every model on its own file (tiny_model.c's list),
#: and those that take the attached EP's forms; any other value names an EP.
_FORMS_OFF = ("0", "false", "no", "off")
_FORMS_BY_EP = ("", "1", "true", "yes", "on", "auto")


def _selected_ep(device: str, device_index: int, fp16_io: bool) -> str:
    """The step of the device chain an open would bind on this machine (the
    last line of vmafdnn.explain_device: "<EP>: selected (<how>)"), or why
    the chain cannot be walked."""
    from . import explain_device  # read at each call: tests replace it
    try:
        text = explain_device(device, device_index, fp16_io)
    except Exception as e:  # no ONNX Runtime, a bad device: the worker says so too
        return f"unresolved: {type(e).__name__}: {e}"
    lines = text.strip().splitlines()
    return lines[-1] if lines else "unresolved"


def _ort_version() -> str:
    from . import ort_version  # read at each call: tests replace it
    try:
        return ort_version()
    except Exception as e:
        return f"unavailable: {type(e).__name__}: {e}"


def _library_version() -> str:
    """libvmafdnn's version and the digest of the sources it was built from: a rebuilt
    library's kernels may score otherwise within one version."""
    from . import __version__, source_digest  # read at each call: tests replace them
    return f"{__version__}+{source_digest()}"


def _run_identity(options: dict, hasher: Hasher) -> dict:
    """What the batch options that change results resolve to, once per batch:
    the options as given, the device and index the workers really get (Ray
    GPU actors bind CUDA's device 0 for "auto", as runners._run_ray does),
    the ONNX Runtime and libvmafdnn versions, the latter with the digest of
    the library's sources (the library's own operators score the kernels
    forms: a model file unchanged may score otherwise under another release
    or a rebuild) and the EP the device chain selects here."""
    run = {k: options.get(k) for k in ("device", "device_index", "fp16_io", "resize",
                                       "threads")}
    device, index = run["device"] or "auto", run["device_index"] or 0
    gpus = bool(options.get("gpus_per_worker"))
    if gpus:
        device, index = (device if device != "auto" else "cuda"), 0
    tag = (device, index, bool(run["fp16_io"]), gpus)
    found = hasher.runs.get(tag)
    if found is None:
        found = hasher.runs[tag] = {
            "ort": _ort_version(),
            "library": _library_version(),
            # On Ray GPU actors the chain is walked there, not here: the key says so.
            "ep": _selected_ep(device, index, bool(run["fp16_io"])) if not gpus
            else f"ray GPU actors: {device}",
        }
    return dict(run, device_bound=device, device_index_bound=index, **found)


def job_key(job: dict, options: dict, hasher: Optional[Hasher] = None) -> str:
    """A digest of everything that decides a job's row: its inputs (absolute
    path, size, mtime), every model file it loads by content (the models,
    their sidecars, the models the sidecars require and the forms they name,
    recursively), the alignment and raw geometry, and the batch options that
    change results (device, device_index, fp16, resize, threads, whether sidecars'
    forms are used: VMAFDNN_MODEL_FORMS), with what they resolve to on the
    machine that starts the batch (the ONNX Runtime version, the EP the device
    chain selects; Ray GPU actors' CUDA), computed once per ``hasher``. With
    the key's version: rows keyed by an older version are scored once more."""
    hasher = hasher or Hasher()
    models = job["models"] or options["models"] or None
    if models is None:
        from . import scoring
        models = scoring.resolve_models(None, job["reference"] is None)
    ident = {
        "version": KEY_VERSION,
        "reference": _file_identity(job["reference"]),
        "distorted": _file_identity(job["distorted"]),
        "models": [_model_identity(os.fspath(m), hasher) for m in models],
        "options": {k: job.get(k) for k in JOB_FIELDS if k not in ("reference", "distorted",
                                                                  "models")},
        "run": _run_identity(options, hasher),
        # which file scores a model with forms (VMAF's features: kernels or pure ONNX)
        "forms": _forms_wanted(),
    }
    text = json.dumps(ident, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]
