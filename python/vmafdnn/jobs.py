"""Job lists of ``vmafdnn batch``, read strictly (docs/batch.md "Job lists").

A job list is a CSV file with a header row, a JSON Lines file (one object a
line) or, in Python, a list of dicts. This module is the only reader of job
lists; it imports nothing of the runners or of the results store.

Every value is checked where it is read, and every refusal is a
:class:`JobListError` (a ValueError) located as ``FILE:LINE: field "x":
why`` (``job N`` for a Python list):

- CSV: a UTF-8 byte-order mark is dropped; header names are stripped of
  surrounding white space (as cells are), and an empty or repeated name is
  refused; a NUL byte, a malformed row or bytes that are not UTF-8 are
  refused with their line.
- JSON Lines: each non-blank line is one object; a repeated key, NaN,
  Infinity and numbers out of range (``1e999``) are refused.
- ``distorted`` (required), ``reference``: non-empty strings without NUL,
  at most 4096 bytes; not ``-`` (a batch has no stdin to give a job).
- ``models``: a list of such strings (``;``-separated in CSV).
- ``ref_offset``, ``dist_offset``: integers 0..MAX_OFFSET; ``width``,
  ``height``: 1..32768; ``bitdepth``: 8..16 (CSV: ASCII digits only).
- ``scale``: true/false (JSON booleans; in CSV 1/0, true/false, yes/no).
- ``pix_fmt``: a non-empty string.
- Labels (every other column): a string, a finite number, a boolean or
  empty; never a name the runner writes (:data:`RESULT_COLUMNS`, the
  pooled-score names of the job's models) and never a near miss of a job
  or result column (``Reference``, ``ref-offset``, ``dist offset``): those
  would be silently taken as labels while the user meant the column.
"""
import csv
import io
import json
import math
import os
import re
from typing import Iterable, List, Optional

__all__ = ["read_jobs", "labels", "JobListError", "JOB_FIELDS", "RESULT_COLUMNS",
           "MAX_LABEL_COLUMNS",
           "POOL_SUFFIXES", "MAX_OFFSET", "MAX_JOB_LIST_BYTES"]

#: Job columns the runner reads; every other column is a label.
JOB_FIELDS = ("reference", "distorted", "models", "ref_offset", "dist_offset", "scale",
              "width", "height", "pix_fmt", "bitdepth")

#: Column suffix of each pooling method ("" is the mean, the headline score).
POOL_SUFFIXES = {"mean": "", "min": "_min", "max": "_max", "harmonic_mean": "_harmonic_mean"}

#: Columns the runner writes in every row besides the job fields and the
#: scores: a label may not take one of these names.
RESULT_COLUMNS = ("frames", "fps", "attached_ep", "file_kbps", "load_s", "score_s", "total_s",
                  "worker", "attempts", "error", "job_key", "report")

#: The largest frame offset a job may ask for (frames skipped at the start).
MAX_OFFSET = 2 ** 31 - 1

#: The largest job list read (a million jobs of ~250 bytes).
MAX_JOB_LIST_BYTES = 256 << 20

_MAX_DIMENSION = 32768  # VMAF_DNN_MAX_DIMENSION
_MAX_PATH_BYTES = 4096
_MAX_LABEL_CHARS = 4096

#: The most distinct label names one job list may use. Each results row has
#: every column, so a JSON Lines list giving each of its 100,000 jobs a label
#: of its own would write 10^10 cells.
MAX_LABEL_COLUMNS = 1024
_INT_RANGES = {"ref_offset": (0, MAX_OFFSET), "dist_offset": (0, MAX_OFFSET),
               "width": (1, _MAX_DIMENSION), "height": (1, _MAX_DIMENSION),
               "bitdepth": (8, 16)}
_DIGITS = re.compile(r"[0-9]+")


class JobListError(ValueError):
    """A job list that cannot be read as written; the message is located
    (``FILE:LINE: field "x": ...``)."""


def _fold(name: str) -> str:
    return re.sub(r"[\s_-]+", "_", name.strip().lower())


_RESERVED_FOLDED = {_fold(n): n for n in JOB_FIELDS + RESULT_COLUMNS}


def read_jobs(source, base_dir: Optional[str] = None,
              default_models: Optional[List[str]] = None) -> List[dict]:
    """The jobs of a CSV / JSON Lines file (by extension: .jsonl/.ndjson/.json
    are JSON Lines, else CSV), or of a list of dicts; relative paths resolved
    against the file's folder (``base_dir`` for a list, default the current
    folder). Raises :class:`JobListError` naming the file, line and field of
    the first bad value. ``default_models``: the models of a job that names
    none, whose score columns its labels may not take."""
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        base_dir = base_dir or os.path.dirname(os.path.abspath(name))
        from .paths import utf8_text
        text = utf8_text(_read_job_file(name), name, JobListError)
        if name.lower().endswith((".jsonl", ".ndjson", ".json")):
            raw = list(_jsonl_items(name, text))
        else:
            raw = list(_csv_items(name, text))
    else:
        if isinstance(source, (str, bytes)) or not isinstance(source, Iterable):
            raise JobListError("jobs: a job-list path or a list of dicts")
        base_dir = base_dir or os.getcwd()
        raw = []
        for n, item in enumerate(source, 1):
            where = f"job {n}"
            if not isinstance(item, dict):
                raise JobListError(f"{where}: a job is a dict with a 'distorted' entry, got "
                                   f"{type(item).__name__}")
            raw.append((where, _check_keys(where, [(k, _python_paths(k, v))
                                                    for k, v in item.items()])))
    jobs, names = [], set()
    for where, item in raw:
        job = _normalise_job(item, where, base_dir, default_models)
        names.update(k for k in job if k not in JOB_FIELDS)
        if len(names) > MAX_LABEL_COLUMNS:
            raise JobListError(f"{where}: more than {MAX_LABEL_COLUMNS} distinct label "
                               "columns in the job list (MAX_LABEL_COLUMNS): every row of the "
                               "results has every column, so the results would grow as rows "
                               "times columns")
        jobs.append(job)
    return jobs


def _read_job_file(name: str) -> bytes:
    """The job list's bytes: a regular file, or a FIFO (``<(make_jobs)``: a
    pipe the user names on purpose), at most MAX_JOB_LIST_BYTES; a device
    (``/dev/zero``) or a folder is refused before a byte is read. Opened
    without blocking and checked on that descriptor (vmafdnn.paths.open_input),
    so a device is never opened for real (a blocking open of a serial line
    waits for its carrier) and what is checked is what is read."""
    import errno

    from .paths import InputFileError, open_input
    try:
        with open_input(name, "job list", fifo_ok=True, max_bytes=MAX_JOB_LIST_BYTES) as f:
            data = f.read(MAX_JOB_LIST_BYTES + 1)
    except InputFileError as e:
        if e.errno == errno.EFBIG:
            raise JobListError(f"{name}: larger than {MAX_JOB_LIST_BYTES >> 20} MiB "
                               "(MAX_JOB_LIST_BYTES): not a job list") from None
        if e.errno == errno.EISDIR:
            raise JobListError(f"{name}: a job list is a file, not a directory") from None
        device = "a character device" in str(e) or "a block device" in str(e)
        raise JobListError(f"{name}: a job list is a file, not "
                           f"{'a device' if device else 'this kind of file'}") from None
    except OSError as e:
        raise JobListError(f"{name}: cannot read the job list: "
                           f"{os.strerror(e.errno) if e.errno else e}") from None
    if len(data) > MAX_JOB_LIST_BYTES:
        raise JobListError(f"{name}: larger than {MAX_JOB_LIST_BYTES >> 20} MiB "
                           "(MAX_JOB_LIST_BYTES): not a job list")
    return data


def _python_paths(key, value):
    """In a Python job (a dict), the path fields as os.PathLike (a
    pathlib.Path, as a Python caller writes them: before, "a path is a
    string, got PosixPath") and ``models`` as a tuple too, made text."""
    if key in ("reference", "distorted") and isinstance(value, os.PathLike):
        return os.fspath(value)
    if key == "models" and isinstance(value, (list, tuple)):
        return [os.fspath(m) if isinstance(m, os.PathLike) else m for m in value]
    if key == "models" and isinstance(value, os.PathLike):
        return [os.fspath(value)]
    return value


def _check_keys(where: str, pairs) -> dict:
    """A dict of ``pairs`` (name, value) with names stripped, refusing an
    empty, non-string or repeated name."""
    out = {}
    for key, value in pairs:
        if not isinstance(key, str):
            raise JobListError(f"{where}: column name {key!r} is not a string")
        name = key.strip()
        if not name:
            raise JobListError(f"{where}: a column has an empty name")
        if "\x00" in name or any(ord(c) < 32 for c in name):
            raise JobListError(f"{where}: column {name!r}: control characters in a column name")
        if name in out:
            raise JobListError(f"{where}: column \"{name}\" is given twice")
        out[name] = value
    return out


class _Object(list):
    """A JSON object as its (key, value) pairs, in order (repeats kept)."""


def _reject_constant(text):
    raise ValueError(f"{text} is not a number JSON allows")


def _jsonl_items(name: str, text: str):
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        where = f"{name}:{n}"
        try:
            item = json.loads(line, parse_constant=_reject_constant,
                              object_pairs_hook=_Object)
        except (json.JSONDecodeError, ValueError, RecursionError) as e:
            raise JobListError(f"{where}: invalid JSON: {e}") from None
        if not isinstance(item, _Object):
            raise JobListError(f"{where}: a job is a JSON object with a \"distorted\" entry, "
                               f"got {_kind(item)}")
        yield where, _check_keys(where, item)


def _csv_items(name: str, text: str):
    if "\x00" in text:
        line = text[:text.index("\x00")].count("\n") + 1
        raise JobListError(f"{name}:{line}: a NUL byte: not a CSV job list")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise JobListError(f"{name}: empty: a CSV job list starts with a header row")
        where = f"{name}:{reader.line_num}"
        header_map = _check_keys(where, [(h, None) for h in header])
        columns = list(header_map)
        for column in columns:
            if column not in JOB_FIELDS:
                check_label_name(where, column)
        if "distorted" not in columns:
            raise JobListError(f"{where}: the header row needs a \"distorted\" column "
                               f"(found: {', '.join(columns)})")
        for cells in reader:
            where = f"{name}:{reader.line_num}"
            if not cells or (len(cells) == 1 and not cells[0].strip()):
                continue  # a blank line
            if len(cells) > len(columns):
                raise JobListError(f"{where}: {len(cells)} cells but {len(columns)} columns "
                                   "in the header")
            yield where, dict(zip(columns, cells + [""] * (len(columns) - len(cells))))
    except csv.Error as e:
        raise JobListError(f"{name}:{reader.line_num}: malformed CSV: {e}") from None


def labels(job: dict) -> dict:
    """The job's labels: every column the runner does not read."""
    return {k: v for k, v in job.items() if k not in JOB_FIELDS and k != "job_key"}


def _field_error(where: str, field: str, why: str) -> JobListError:
    return JobListError(f"{where}: field \"{field}\": {why}")


def _path_value(where: str, field: str, value, base_dir: str) -> str:
    if not isinstance(value, str):
        raise _field_error(where, field, f"a path is a string, got {_kind(value)}")
    value = value.strip()
    if not value:
        raise _field_error(where, field, "empty path")
    if "\x00" in value:
        raise _field_error(where, field, "a NUL character in a path")
    if len(os.fsencode(value)) > _MAX_PATH_BYTES:
        raise _field_error(where, field, f"a path longer than {_MAX_PATH_BYTES} bytes")
    if value == "-":
        raise _field_error(where, field, "'-' (stdin) cannot be a batch job's clip: give a file")
    return value if os.path.isabs(value) else os.path.join(base_dir, value)


def _kind(value) -> str:
    kinds = {bool: "a boolean", int: "a number", float: "a number", list: "an array",
             dict: "an object", _Object: "an object", type(None): "null", str: "a string"}
    return kinds.get(type(value), type(value).__name__)


def _int_value(where: str, field: str, value) -> int:
    lo, hi = _INT_RANGES[field]
    if isinstance(value, str):
        if not _DIGITS.fullmatch(value):
            raise _field_error(where, field, f"must be an integer {lo}..{hi}, got {value!r}")
        if len(value) > 12:
            raise _field_error(where, field, f"must be {lo}..{hi}, got {value[:20]}...")
        number = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    else:
        shown = repr(value) if isinstance(value, float) else _kind(value)
        raise _field_error(where, field, f"must be an integer {lo}..{hi}, got {shown}")
    if not lo <= number <= hi:
        shown = (str(number) if number.bit_length() < 64
                 else f"a number of {len(str(number))} digits")
        raise _field_error(where, field, f"must be {lo}..{hi}, got {shown}")
    return number


def _label_value(where: str, field: str, value):
    if value is None or isinstance(value, (str, bool, int)):
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 63:
            raise _field_error(where, field, "a label number out of the 64-bit range")
        if isinstance(value, str):
            if "\x00" in value:
                raise _field_error(where, field, "a NUL character in a label")
            if len(value) > _MAX_LABEL_CHARS:
                raise _field_error(where, field, f"a label longer than {_MAX_LABEL_CHARS} "
                                   "characters")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _field_error(where, field, f"a label number must be finite, got {value!r}")
        return value
    raise _field_error(where, field, f"a label is a string, number or boolean, got {_kind(value)}")


def check_label_name(where: str, name: str, models: Optional[List[str]] = None) -> None:
    """Refuses a label named like a column the runner writes, or a near
    miss of a job or result column (the user meant that column)."""
    if name in RESULT_COLUMNS:
        hint = (" (this looks like a results file of vmafdnn batch: a job list names "
                "clips and labels, not results)" if name in ("job_key", "frames", "error")
                else "")
        raise _field_error(where, name, f"\"{name}\" is a result column: the runner writes it "
                           f"in every row, so it cannot be a label; rename the column{hint}")
    folded = _fold(name)
    if folded in _RESERVED_FOLDED and name not in JOB_FIELDS:
        meant = _RESERVED_FOLDED[folded]
        if meant in RESULT_COLUMNS:
            raise _field_error(where, name, f"too close to the result column \"{meant}\" to "
                               "be a label (a reader of the results could take one for the "
                               "other); rename the column")
        raise _field_error(where, name, f"not a job-list column; did you mean \"{meant}\"? "
                           "(column names are exact and lowercase; a near miss is refused "
                           "rather than taken as a label)")
    for model in models or ():
        stem = os.path.splitext(os.path.basename(model))[0]
        for suffix in POOL_SUFFIXES.values():
            if name == stem + suffix:
                raise _field_error(where, name, f"\"{name}\" is a score column of model "
                                   f"{stem}: a label cannot take its name; rename the column")


def _normalise_job(item: dict, where: str, base_dir: str,
                   default_models: Optional[List[str]] = None) -> dict:
    job = {}
    for key, value in item.items():
        if isinstance(value, str):
            value = value.strip()
            if value == "":
                value = None
        job[key] = value
    if job.get("distorted") is None:
        raise _field_error(where, "distorted", "missing: every job names the clip to score")
    job["distorted"] = _path_value(where, "distorted", job["distorted"], base_dir)
    ref = job.get("reference")
    job["reference"] = None if ref is None else _path_value(where, "reference", ref, base_dir)
    models = job.get("models")
    if isinstance(models, str):
        models = [m.strip() for m in models.split(";") if m.strip()]
    if models is not None:
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            raise _field_error(where, "models", "a list of model paths or built-in names "
                               f"(strings), got {_kind(models)}")
        from . import models as _builtin
        checked = []
        for m in models:
            m = m.strip()
            if not m:
                raise _field_error(where, "models", "an empty model name")
            if "\x00" in m:
                raise _field_error(where, "models", "a NUL character in a model name")
            checked.append(_path_value(where, "models", m, base_dir) if _builtin.is_path(m)
                           else m)
        models = checked
    job["models"] = models or None
    for key in _INT_RANGES:
        if job.get(key) is not None:
            job[key] = _int_value(where, key, job[key])
    scale = job.get("scale")
    if isinstance(scale, str):
        if scale.lower() not in ("0", "1", "true", "false", "yes", "no"):
            raise _field_error(where, "scale", f"true or false, got {scale!r}")
        scale = scale.lower() in ("1", "true", "yes")
    elif scale is not None and not isinstance(scale, bool):
        raise _field_error(where, "scale", f"true or false, got {_kind(scale)}")
    job["scale"] = bool(scale)
    pix_fmt = job.get("pix_fmt")
    if pix_fmt is not None:
        if not isinstance(pix_fmt, str) or "\x00" in pix_fmt:
            raise _field_error(where, "pix_fmt", f"a pixel format name, got {_kind(pix_fmt)}")
    model_names = list(job["models"] or default_models or ())
    for key, value in list(job.items()):
        if key in JOB_FIELDS:
            continue
        check_label_name(where, key, model_names)
        job[key] = _label_value(where, key, value)
    return job


def label_clashes(job: dict, row: dict) -> List[str]:
    """The labels of ``job`` that a worker's row also has (a model output
    named like a label): the row's value would silently replace one or the
    other, so the row fails naming them."""
    return [k for k in labels(job) if k in row]


__all__ += ["check_label_name", "label_clashes"]
