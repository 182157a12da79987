"""vmafdnn.score(): score a distorted clip (against a reference) in one call.

Sources are Y4M or raw YUV files, "-" (Y4M on stdin), binary file objects,
or iterables of :class:`vmafdnn.video.Frame` objects or 2-D numpy luma
planes. Frames stream through a :class:`vmafdnn.Context` one pair at a time,
so memory does not grow with the clip's length.
"""
import codecs
import errno
import io
import itertools
import json
import math
import operator
import os
import re
import sys
import threading
from array import array
from collections.abc import Mapping
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import models as _builtin
from .context import Context, format_for_path
from .errors import InvalidArgumentError, RunCancelledError, int_shown, range_text
from .paths import STDIO, Inputs, UsageError, check_output, open_input, std_stream
from .video import Frame, VideoFormatError, Y4MReader, describe_reader, open_video

__all__ = ["score", "Canceller", "InputMismatchError", "UsageError", "load_features",
           "Features", "refuse_overwrite", "DEFAULT_FR_MODELS", "DEFAULT_NR_MODELS",
           "MAX_FEATURES_FILE_BYTES", "MAX_FEATURES_VALUE_BYTES", "MAX_FEATURE_METRICS",
           "MAX_FEATURE_FRAME"]

#: Largest features file load_features() reads (256 MiB), so an endless
#: source (stdin that never closes) ends in an error, not in the OOM killer.
#: libvmaf's JSON report takes about 40 bytes per metric per frame plus 60
#: per frame: with the 12 metrics of its default VMAF run (~540 bytes a
#: frame) 256 MiB holds 490,000 frames, a 2-hour clip at 60 fps (432,000
#: frames: 233 MB), 4K or not (the size of a frame does not matter); with 30
#: metrics, 2 hours at 30 fps.
MAX_FEATURES_FILE_BYTES = 256 << 20

#: Largest single value in a features file: one frame object (or another
#: top-level value such as "pooled_metrics"); 20,000 metrics fit.
MAX_FEATURES_VALUE_BYTES = 4 << 20

#: Most distinct metric names a features file may hold.
MAX_FEATURE_METRICS = 1 << 16

#: Largest frameNum: the C library's last frame index (VDNN_FEATURE_MAX_FRAMES - 1).
MAX_FEATURE_FRAME = (1 << 24) - 1

#: Built-in models used when ``models`` is None (the C library's default sets).
DEFAULT_FR_MODELS = tuple(_builtin.default_models())
DEFAULT_NR_MODELS = tuple(_builtin.default_models(no_reference=True))


class InputMismatchError(ValueError):
    """Reference and distorted disagree in frame size, bit depth or frame count."""


class Canceller:
    """Stops work running on another thread: ``score(..., cancel=c)`` (or any
    object with a ``cancel()`` method given to :meth:`watch`, such as a
    Session or Context), then ``c.cancel()`` from any thread. The model run in
    flight is stopped (RunCancelledError), and score() checks between frames.
    Once cancelled it stays cancelled; watching after that cancels at once."""

    def __init__(self):
        self._lock = threading.Lock()
        self._cancelled = False
        self._watched = []

    def __reduce__(self):
        # It stands for the live work it watches in this process: a copy
        # would share that list (cancelling the copy stopped the original's
        # work while the original still read as not cancelled), and a pickle
        # failed on its lock ("cannot pickle '_thread.lock' object").
        raise TypeError("a vmafdnn.Canceller cannot be copied or pickled (it watches work "
                        "running in this process); make one where the work runs")

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def watch(self, obj) -> None:
        """Cancels ``obj`` (``obj.cancel()``) when this is cancelled."""
        with self._lock:
            self._watched.append(obj)
            cancelled = self._cancelled
        if cancelled:
            obj.cancel()

    def unwatch(self, obj) -> None:
        with self._lock:
            self._watched = [o for o in self._watched if o is not obj]

    def cancel(self) -> None:
        """Thread-safe; not for signal handlers (call it from a thread)."""
        with self._lock:
            self._cancelled = True
            watched = list(self._watched)
        for obj in watched:
            obj.cancel()

    def check(self, done: int) -> None:
        """Raises RunCancelledError when cancelled."""
        if self._cancelled:
            raise RunCancelledError(errno.ECANCELED, f"cancelled after {done} frame(s)")


Source = Union[str, "os.PathLike[str]", io.BufferedIOBase, Iterable]


class _Input:
    """One side (reference or distorted): a frame iterator plus what is known
    of it up front (geometry and frame rate from a Y4M header, a frame count
    from a raw file's size)."""

    def __init__(self, role: str, source: Source, bitdepth: Optional[int], raw: dict,
                 offset: int = 0):
        self.role = role
        self.reader = None
        # Whether a frame stays as it is once the next one is taken (see _run).
        self.frames_stay = False
        self.width = self.height = self.depth = self.fps = self.total = None
        self._bitdepth = bitdepth
        if isinstance(source, (str, os.PathLike, io.IOBase)) or hasattr(source, "read"):
            try:
                self.reader = open_video(source, bitdepth=bitdepth, **raw)
            except VideoFormatError:
                raise
            except ValueError as e:  # arguments, not data: see video.VideoFormatError
                raise UsageError(f"{role}: {e}") from None
            self.name = self.reader.name
            self.width, self.height = self.reader.width, self.reader.height
            self.depth = self.reader.bitdepth
            self.fps = getattr(self.reader, "fps", None)
            self.total = (_y4m_frame_estimate(source, self.reader)
                          if isinstance(self.reader, Y4MReader)
                          else getattr(self.reader, "frame_count", None))
            self._frames = iter(self.reader)
            self.frames_stay = True  # each frame is read into a buffer of its own
        elif isinstance(source, (np.ndarray, Iterable)) and not isinstance(source, (str, bytes)):
            self.name = f"{role} frames"
            if isinstance(source, np.ndarray) and source.ndim == 3:
                self.total = source.shape[0]
            elif isinstance(source, Sequence):
                self.total = len(source)
            # A sequence's frames exist before scoring and are not refilled by
            # the iteration, as a generator's may be.
            self.frames_stay = isinstance(source, (np.ndarray, Sequence))
            self._frames = iter(source)
        else:
            raise TypeError(f"{role}: expected a path, '-', a binary file or an iterable of "
                            f"frames, got {type(source).__name__}")
        self.count = 0
        if offset:  # --ref-offset / --dist-offset: frames dropped before scoring
            self._frames = itertools.islice(self._frames, offset, None)
            self.total = None if self.total is None else max(0, self.total - offset)

    def scale_like(self, ref: "_Input") -> None:
        """Scales every frame to the reference's size (known at open: a file)."""
        if ref.width is None:
            raise UsageError("scale=True needs a reference whose size is known before its "
                             "first frame (a file or stream, not an iterable of frames)")
        if (self.width, self.height) != (ref.width, ref.height):
            from .media import scale_frames
            self._frames = scale_frames(self._frames, ref.width, ref.height)
            self.width, self.height = ref.width, ref.height

    def summary(self, frames: Optional[str] = None) -> str:
        """What this side is, for mismatch errors (see video.describe_reader)."""
        if self.reader is not None:
            return describe_reader(self.reader, frames)
        return frames or "frames from the caller"

    def next(self):
        """The next picture (a Frame or a 2-D array), or None at the end."""
        picture = next(self._frames, None)
        if picture is not None:
            self.count += 1
        return picture

    def describe(self, picture) -> Tuple[int, int, int]:
        """(width, height, bit depth) of a picture from this input."""
        if isinstance(picture, Frame):
            return picture.width, picture.height, picture.bitdepth
        plane = np.asarray(picture)
        if plane.ndim != 2:
            raise ValueError(f"{self.name}: frame {self.count - 1}: expected a 2-D luma "
                             f"array, got shape {plane.shape}")
        if plane.dtype == np.uint8:
            depth = 8
        elif self._bitdepth is None:
            raise UsageError(f"{self.name}: {plane.dtype} arrays need bitdepth=")
        else:
            depth = self._bitdepth
        return plane.shape[1], plane.shape[0], depth

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()


def _y4m_frame_estimate(source, reader) -> Optional[int]:
    """Frames in a regular Y4M file, assuming bare "FRAME" headers (for progress only)."""
    if not isinstance(source, (str, os.PathLike)) or os.fspath(source) == "-":
        return None
    try:
        size = os.path.getsize(source)
    except OSError:
        return None
    per_frame = reader.frame_bytes + len(b"FRAME\n")
    return max(0, size // per_frame) if per_frame else None


def _format(depth: int) -> str:
    return f"{depth}-bit"


def _check_match(ref: Tuple[int, int, int], dist: Tuple[int, int, int], where: str) -> None:
    if ref[:2] != dist[:2]:
        raise InputMismatchError(
            f"size mismatch{where}: reference is {ref[0]}x{ref[1]} but distorted is "
            f"{dist[0]}x{dist[1]}")
    if ref[2] != dist[2]:
        raise InputMismatchError(
            f"bit depth mismatch{where}: reference is {_format(ref[2])} but distorted is "
            f"{_format(dist[2])}")


def _check_inputs(ref: _Input, dist: _Input, scale: bool) -> None:
    """What is known at open must line up: size (unless scaled), depth, frame rate."""
    both = f" (reference: {ref.summary()}; distorted: {dist.summary()})"
    if ref.width is not None and dist.width is not None:
        try:
            _check_match((ref.width, ref.height, ref.depth),
                         (dist.width if not scale else ref.width,
                          dist.height if not scale else ref.height, dist.depth), "")
        except InputMismatchError as e:
            hint = "; scale=True (--scale) scales the distorted clip to the reference size" \
                if "size" in str(e) else ""
            raise InputMismatchError(f"{e}{both}{hint}") from None
    if ref.fps and dist.fps and abs(float(ref.fps) / float(dist.fps) - 1) > 1e-3:
        raise InputMismatchError(
            f"frame rate mismatch: reference is {float(ref.fps):.6g} fps but distorted is "
            f"{float(dist.fps):.6g} fps{both}; frame n of one would be scored against another "
            "instant of the other: convert one first (ffmpeg -i IN -r RATE ...)")


def refuse_overwrite(output, what: str, inputs: Dict[str, object]) -> None:
    """Raises UsageError when ``output`` (a path about to be written) is the
    same file as one of ``inputs`` ({role: source}, sources or other
    outputs), whatever the spelling: ``-o ref.y4m`` would replace the
    reference with a report (existing files are compared by device and inode,
    so hard and symbolic links and relative paths are caught too, and by
    resolved path; see vmafdnn.paths.Inputs)."""
    Inputs(inputs).refuse(output, what)


def _offset(value, name: str) -> int:
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if not 0 <= value <= sys.maxsize:
        raise UsageError(f"{name} (frames) {range_text(0, sys.maxsize, int_shown(value))}")
    return value


class Features(Mapping):
    """Per-frame metrics of a features file, stored compactly (one double per
    value in one array, a (names, offset) entry per frame, each distinct set
    of metric names once): ``features[frameNum]`` is a new ``{name: value}`` dict.
    A read-only Mapping, equal to the plain dict of the same contents."""

    def __init__(self):
        self._names: List[str] = []
        self._column: Dict[str, int] = {}
        self._keysets: List[array] = []
        self._keyset_id: Dict[bytes, int] = {}
        self._values = array("d")
        self._rows = {}  # frameNum -> (keyset id, first value)

    def _add(self, num: int, names: List[str], values: List[float], where: str) -> None:
        cols = array("I")
        for name in names:
            col = self._column.get(name)
            if col is None:
                if len(self._names) >= MAX_FEATURE_METRICS:
                    raise ValueError(f"{where}: more than {MAX_FEATURE_METRICS} distinct metric "
                                     "names (MAX_FEATURE_METRICS)")
                col = self._column[name] = len(self._names)
                self._names.append(name)
            cols.append(col)
        key = cols.tobytes()
        keyset = self._keyset_id.get(key)
        if keyset is None:
            keyset = self._keyset_id[key] = len(self._keysets)
            self._keysets.append(cols)
        self._rows[num] = (keyset, len(self._values))
        self._values.extend(values)

    def __getitem__(self, num) -> Dict[str, float]:
        keyset, start = self._rows[num]
        cols = self._keysets[keyset]
        return {self._names[c]: self._values[start + i] for i, c in enumerate(cols)}

    def __iter__(self):
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, num) -> bool:
        return num in self._rows

    @property
    def metric_names(self) -> List[str]:
        """Every metric name, in order of first appearance."""
        return list(self._names)


class JsonStream:
    """A JSON text read in chunks: values are decoded one at a time, each at
    most MAX_FEATURES_VALUE_BYTES, the whole at most ``limit`` bytes, so
    memory follows the largest value, not the file."""

    _WS = re.compile(r"[ \t\n\r]*")
    _NUMBER_TAIL = re.compile(r"[0-9.eE+\-]*")
    CHUNK = 1 << 20

    def __init__(self, f, name: str, limit: int, what: str = "features file",
                 cap_name: str = "MAX_FEATURES_FILE_BYTES"):
        self._f, self.name, self._limit = f, name, limit
        self._cap_name = cap_name
        # What errors start with: "features file NAME", or NAME alone (what="").
        self.label = f"{what} {name}" if what else name
        self._decode = codecs.getincrementaldecoder("utf-8")().decode
        self._json = json.JSONDecoder(parse_int=_json_int, parse_constant=_json_constant)
        self.buf, self.pos, self._read, self.eof = "", 0, 0, False
        self._line, self._line_pos = 1, 0

    def line(self) -> int:
        """The line (1-based) of the next character."""
        self._line += self.buf.count("\n", self._line_pos, self.pos)
        self._line_pos = self.pos
        return self._line

    def _more(self, want: int = 0) -> bool:
        if self.eof:
            return False
        chunk = self._f.read(max(self.CHUNK, want))
        self._read += len(chunk or b"")
        if self._read > self._limit:
            raise ValueError(f"{self.label} is larger than {self._limit} bytes "
                             f"({self._cap_name}, {self._limit >> 20} MiB)")
        try:
            text = self._decode(chunk or b"", final=not chunk)
        except UnicodeDecodeError as e:
            raise ValueError(f"{self.label}: not UTF-8 text ({e.reason}) near "
                             f"byte {self._read - len(chunk or b'') + e.start}") from None
        self.line()
        self.buf, self._line_pos, self.pos = self.buf[self.pos:] + text, 0, 0
        self.eof = not chunk
        return True

    def peek(self) -> str:
        """The next non-space character ("" at the end)."""
        while True:
            self.pos = self._WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def expect(self, chars: str, what: str) -> str:
        ch = self.peek()
        if not ch or ch not in chars:
            found = repr(ch) if ch else "the end of the file"
            raise ValueError(f"{self.label}: line {self.line()}: invalid JSON: "
                             f"expected {what}, found {found}")
        self.pos += 1
        return ch

    def value(self, what: str):
        """The next JSON value (``what`` names it in errors)."""
        self.peek()
        while True:
            start = self.pos
            try:
                obj, end = self._json.raw_decode(self.buf, start)
            except json.JSONDecodeError as e:
                truncated = e.pos >= len(self.buf) - 8 or e.msg.startswith("Unterminated")
                if self.eof or not truncated:
                    line = self.line() + self.buf.count("\n", start, e.pos)
                    raise ValueError(f"{self.label}: line {line}: {what}: invalid "
                                     f"JSON: {e.msg}") from None
                end = None
            except ValueError as e:  # parse_int / parse_constant
                raise ValueError(f"{self.label}: line {self.line()}: {what}: "
                                 f"{e}") from None
            except RecursionError:
                raise ValueError(f"{self.label}: line {self.line()}: {what} is "
                                 "nested too deeply") from None
            if end is not None and (self.eof or not self._NUMBER_TAIL.fullmatch(self.buf, end)):
                if end - start > MAX_FEATURES_VALUE_BYTES:
                    break
                self.pos = end
                return obj
            if len(self.buf) - start > MAX_FEATURES_VALUE_BYTES:
                break
            self._more(len(self.buf) - start)  # doubles what is held: linear in all
        raise ValueError(f"{self.label}: line {self.line()}: {what} is larger "
                         f"than {MAX_FEATURES_VALUE_BYTES} bytes (MAX_FEATURES_VALUE_BYTES)")


def _json_int(text: str):
    # An integer too long for a double's range stays out of int(): its float
    # is inf, refused where the number is checked, with its place.
    return int(text) if len(text) <= 32 else float(text)


def _json_constant(name: str) -> float:
    # NaN is JSON's null (a metric without a value); Infinity is refused where checked.
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[name]


def _open_features(path, allow_stream: bool):
    """(binary file, name, owned) for a features file: a regular file, or
    stdin ("-"), or with ``allow_stream`` a FIFO. Opened without blocking,
    so a FIFO with no writer is refused, not waited on (vmafdnn.paths.open_input)."""
    name = os.fsdecode(os.fspath(path))
    if name == STDIO:
        return std_stream(written=False), "- (stdin)", False
    return open_input(name, "features file", fifo_ok=allow_stream, wait_for_writer=False,
                      hint="write it to a file first, or pipe it to stdin and pass "
                           "--features - (features=\"-\")"), name, True


def load_features(path, *, allow_stream: bool = False,
                  max_bytes: Optional[int] = None) -> "Features":
    """Per-frame metrics of a libvmaf JSON report: a :class:`Features`
    mapping {frameNum: {name: value}} (null values become NaN).

    ``path``: a regular file, or "-" for stdin; a FIFO only with
    ``allow_stream``; devices (/dev/zero) never. The file is parsed as a
    stream, one frame object at a time: memory follows the values kept (8
    bytes each), not the text. At most ``max_bytes`` (default
    MAX_FEATURES_FILE_BYTES) are read, each frame object (or other
    top-level value) at most MAX_FEATURES_VALUE_BYTES. Every number is
    checked where it is read: frameNum an integer 0..MAX_FEATURE_FRAME,
    each metric a finite number (or null); an error names the file, the
    line, the frame and the field."""
    limit = MAX_FEATURES_FILE_BYTES if max_bytes is None else max_bytes
    f, name, owned = _open_features(path, allow_stream)
    try:
        return parse_features(JsonStream(f, name, limit))
    finally:
        if owned:
            f.close()


def parse_features(js: JsonStream) -> "Features":
    out = Features()
    js.expect("{", "a libvmaf JSON report (an object with a \"frames\" array)")
    seen = False
    if js.peek() == "}":
        js.pos += 1
    else:
        while True:
            key = js.value("a key of the report")
            if not isinstance(key, str):
                raise ValueError(f"{js.label}: line {js.line()}: invalid JSON: "
                                 "expected a key (a string)")
            js.expect(":", "':'")
            if key == "frames":
                if seen:
                    raise ValueError(f"{js.label}: line {js.line()}: \"frames\" "
                                     "appears twice")
                seen = True
                _parse_frames(js, out)
            else:
                js.value(f"the value of {key!r}")
            if js.expect(",}", "',' or '}'") == "}":
                break
    if js.peek():
        raise ValueError(f"{js.label}: line {js.line()}: invalid JSON: extra data "
                         "after the report")
    if not seen:
        raise ValueError(f"{js.label}: expected a libvmaf JSON report with a "
                         "\"frames\" array")
    return out


def _parse_frames(js: JsonStream, out: "Features") -> None:
    js.expect("[", "the \"frames\" array")
    if js.peek() == "]":
        js.pos += 1
        return
    k = 0
    while True:
        js.peek()  # the frame's first character: its line
        line = js.line()
        frame = js.value(f"frames[{k}]")
        where = f"{js.label}: line {line}: frames[{k}]"
        if not isinstance(frame, dict):
            raise ValueError(f"{where} is not an object")
        num, metrics = frame.get("frameNum"), frame.get("metrics")
        if not isinstance(num, int) or isinstance(num, bool) or not \
                0 <= num <= MAX_FEATURE_FRAME:
            raise ValueError(f"{where}: \"frameNum\" must be an integer 0..{MAX_FEATURE_FRAME}, "
                             f"got {_shown(num)}")
        where = f"{where} (frameNum {num})"
        if not isinstance(metrics, dict):
            raise ValueError(f"{where}: \"metrics\" must be an object")
        if num in out:
            raise ValueError(f"{where}: frame {num} appears twice")
        values = []
        for key, value in metrics.items():
            if value is None:
                value = math.nan
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{where}: metric {key!r} is not a number: {_shown(value)}")
            else:
                value = float(value)
                if math.isinf(value):
                    raise ValueError(f"{where}: metric {key!r} is not a finite number (or "
                                     "beyond a double's range); a value that is not a number "
                                     "is written null")
            values.append(value)
        out._add(num, list(metrics), values, where)
        k += 1
        if js.expect(",]", "',' or ']' in the \"frames\" array") == "]":
            return


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def resolve_models(models, no_reference: bool) -> List:
    if models is None:
        return list(DEFAULT_NR_MODELS if no_reference else DEFAULT_FR_MODELS)
    if isinstance(models, (str, os.PathLike)):
        return [models]
    models = list(models)
    if not models:
        defaults = DEFAULT_NR_MODELS if no_reference else DEFAULT_FR_MODELS
        raise UsageError("models is empty: give at least one model (or None for the default "
                         f"ones: {', '.join(defaults)})")
    return models


def score(reference: Optional[Source], distorted: Source, models=None, *,
          device: str = "auto", device_index: int = 0, threads: int = 0,
          fp16_io: bool = False, resize: str = "none", no_reference: bool = False,
          output: Union[str, "os.PathLike[str]", None] = None, fmt: Optional[str] = None,
          features: Union[str, "os.PathLike[str]", None] = None,
          progress: Optional[Callable[[int, Optional[int]], None]] = None,
          width: Optional[int] = None, height: Optional[int] = None,
          pix_fmt: Optional[str] = None, bitdepth: Optional[int] = None,
          fps: Optional[float] = None, scale: bool = False, ref_offset: int = 0,
          dist_offset: int = 0, cancel: Optional[Canceller] = None, batch: int = 0,
          static_shapes: str = "auto", device_io: str = "auto",
          other_outputs: Optional[Dict[str, object]] = None,
          **policy) -> Dict[str, object]:
    """Scores ``distorted`` (against ``reference``) with tiny models.

    ``reference`` / ``distorted``: a Y4M or raw YUV path, any container and
    codec FFmpeg's libraries decode (mp4, mkv, webm, ...: recognised by
    content, decoded through PyAV), "-" (stdin, one side only), a binary file
    object, or an iterable of Frames or 2-D numpy luma planes (uint8; uint16
    with ``bitdepth``). ``reference`` None (or ``no_reference=True``) scores
    no-reference models only. Raw YUV needs ``width``, ``height``,
    ``pix_fmt`` (420, 422, 444, 400) and ``bitdepth``. The frames of a
    sequence (a list, a 3-D array) are read where they lie, also while other
    frames are read (``threads`` > 1): nothing may write them until this call
    returns; those of another iterable (a generator may refill one array)
    are copied.

    ``models``: .onnx paths or built-in names; None means the library's default
    set, DEFAULT_FR_MODELS (psnr_y, ssim_y and, where it was built, vmaf), or
    DEFAULT_NR_MODELS (sharpness_nr) without a reference. ``device``, ``device_index``,
    ``threads``, ``fp16_io``, ``resize``, ``batch`` (frames per ONNX Runtime Run for
    models that can take several; see :class:`Context`), ``static_shapes`` and ``device_io``
    (see :class:`vmafdnn.Session`) configure every model.
    ``features``: a libvmaf JSON report whose per-frame metrics are fed to
    feature-vector models and appear in the report (metrics named like a
    model's output are skipped: the model computes them).
    ``progress(frames_done, total_or_None)`` is called after every frame read with the
    frames whose scores are in (with frames in flight, ``threads`` > 1 or a ``batch``, fewer
    than the frames read), and once more at the end when frames were still in flight.
    ``fps``: written into the report's "fps" instead of the measured
    processing speed (default: measured, frames scored per second, which is
    what libvmaf's "fps" means; it is not the clip's frame rate).

    Alignment (all off by default): ``scale`` scales each distorted frame to
    the reference frame's size (bicubic, FFmpeg's swscale); ``ref_offset`` /
    ``dist_offset`` drop that many frames at the start of either side.

    ``cancel``: a :class:`Canceller`; cancelling it from another thread stops
    the scoring with RunCancelledError, and then no report is written (an
    existing file at ``output`` is left as it was): a report of the frames
    before an interruption would look like a report of the whole clip.
    The keyword-only ``policy`` arguments (``model_dir``, ``max_memory_bytes``,
    ``max_run_ms``, ...; see :class:`vmafdnn.Session`) apply to every model.

    Returns the report as plain data: version, fps, frames[{frameNum,
    metrics}], pooled_metrics{name: {min, max, mean, harmonic_mean}},
    aggregate_metrics, models[{path, kind, features, attached_ep,
    fallback_reason, form (the file that scores when the model's sidecar names
    a form for attached_ep, else None), ...}]. With ``output`` the report is also written there
    (``fmt`` json, xml or csv; default from the extension, else json; "-" is
    stdout) -- also when scoring fails part-way, with the frames scored so
    far, before the error is raised (not after a cancellation).
    ``other_outputs``: {what: path} of files the caller will write from the
    result (a plot, say), checked like ``output``.

    Every output path is checked before anything is read
    (vmafdnn.paths.check_output: not empty, not a directory, its directory
    exists and is writable, no device but /dev/null) and refused when it is
    one of the files the run reads: the clips, the features file, every model
    file attached (those a sidecar "requires", the "forms" that score in a
    model's place) and their sidecars -- compared by device and inode and by
    resolved path, so links are caught -- before the first frame.

    Raises InputMismatchError (a ValueError) when reference and distorted
    differ in size, bit depth, frame rate or frame count (the message
    describes both inputs; a count mismatch stops at the first frame one
    input lacks, reading at most one frame past the shorter one), UsageError (a ValueError) for
    arguments that cannot work together (an output that is one of the
    input files, an empty or directory output path), VideoFormatError for malformed
    video, and the DnnError subclasses of the C library (bad model, missing
    feature, ...).
    """
    if reference is not None and no_reference:
        raise UsageError("no_reference=True scores the distorted input alone: give no "
                         "reference")
    no_reference = reference is None
    if _is_stdin(reference) and _is_stdin(distorted):
        raise UsageError("reference and distorted cannot both be read from stdin ('-')")
    if _is_stdin(features) and (_is_stdin(reference) or _is_stdin(distorted)):
        raise UsageError("the features file and a video cannot both be read from stdin ('-')")
    out_fmt = format_for_path(output, fmt) if output is not None or fmt is not None else None
    writes = _outputs(output, other_outputs)
    # Every file read is an input no output may replace: checked now with the
    # files named (clips, features file, model paths with their sidecars) and
    # again once the models are attached (those a sidecar requires, the forms
    # that score in their place), before the first frame.
    guard = Inputs({"reference input": reference, "distorted input": distorted,
                    "features file": features})
    model_list = resolve_models(models, no_reference)
    for model in model_list:
        if isinstance(model, (str, bytes, os.PathLike)) and _builtin.is_path(model):
            guard.add_model(model)
    _refuse_outputs(guard, writes)
    ref_offset, dist_offset = _offset(ref_offset, "ref_offset"), _offset(dist_offset,
                                                                          "dist_offset")
    pushed = load_features(features) if features is not None else {}

    raw = {"width": width, "height": height, "pix_fmt": pix_fmt}
    inputs: List[_Input] = []
    try:
        dist = _Input("distorted", distorted, bitdepth, raw, dist_offset)
        inputs.append(dist)
        ref = None
        if not no_reference:
            ref = _Input("reference", reference, bitdepth, raw, ref_offset)
            inputs.append(ref)
            _check_inputs(ref, dist, scale)
            if scale:
                dist.scale_like(ref)
        cancel = cancel if cancel is not None else Canceller()
        with Context(device=device, device_index=device_index, threads=threads,
                     fp16_io=fp16_io, resize=resize, fps=fps, batch=batch,
                     static_shapes=static_shapes, device_io=device_io, **policy) as ctx:
            cancel.watch(ctx)
            try:
                for model in model_list:
                    ctx.use_model(model, no_reference=no_reference)
                guard.add_models(ctx.models)
                _refuse_outputs(guard, writes)
                if out_fmt is not None:
                    _check_report_names(ctx, out_fmt, pushed)

                def write(c):
                    _write_report(c, output, out_fmt)
                score_frames(ctx, ref, dist, pushed, progress, cancel, output, out_fmt,
                             write=write)
                result = ctx.report()
                cancel.check(len(result["frames"]))
                if output is not None:
                    write(ctx)
            finally:
                cancel.unwatch(ctx)
        return result
    finally:
        for side in inputs:
            side.close()


def _check_report_names(ctx: Context, fmt: str, pushed: Dict[int, Dict[str, float]]) -> None:
    """UsageError before the first frame when the report format cannot carry
    a feature name (a model keyed or a features-file metric named "Frame" in
    CSV, say): the C writer would refuse it only once every frame was
    scored (Context.check_output, the writer's own rule)."""
    appended = dict.fromkeys(name for values in pushed.values() for name in values)
    try:
        ctx.check_output(fmt, list(appended))
    except InvalidArgumentError as e:
        raise UsageError(f"the {fmt.upper()} report cannot be written: {e}") from None


def _outputs(output, other_outputs) -> List[Tuple[str, object]]:
    """[(what, path)] of every file score() and its caller write, each checked
    (vmafdnn.paths.check_output) before anything is read; the report may be
    "-" (stdout), the others not; no two may be the same file."""
    writes = []
    if output is not None:
        check_output(output, "report", stdout_ok=True)
        writes.append(("report", output))
    for what, path in (other_outputs or {}).items():
        if path is not None:
            check_output(path, what)
            writes.append((what, path))
    return writes


def _refuse_outputs(guard: Inputs, writes: List[Tuple[str, object]]) -> None:
    for k, (what, path) in enumerate(writes):
        guard.refuse(path, what)
        others = Inputs()
        for other, p in writes[:k]:
            others.add(other, p, written=True)
        others.refuse(path, what)


def _write_report(ctx, output, fmt) -> None:
    """The report into ``output``; "-" is stdout."""
    if os.fsdecode(os.fspath(output)) == STDIO:
        stream = std_stream(written=True)
        sys.stdout.flush()
        ctx.write_file(stream, fmt or "json")
        stream.flush()
    else:
        ctx.write(output, fmt)


def score_frames(ctx, ref, dist, pushed, progress, cancel, output=None, fmt=None,
                 write=None) -> None:
    """Scores every frame pair into ``ctx`` and flushes it. When that fails
    with an error (not when cancelled, nor interrupted: KeyboardInterrupt,
    SystemExit) and ``output`` is given, the frames scored before the failure
    are written there (by ``write(ctx)`` when given), for a look, and the
    error is raised. An interruption writes nothing, as the command line's
    does: the frames before it would look like a report of the whole clip,
    in place of the file that was there."""
    try:
        read, told, total = _run(ctx, ref, dist, pushed, progress, cancel)
        ctx.flush()
        if progress is not None and told < read:  # the frames that were in flight
            progress(read, total)
    except Exception:
        if output is not None and not cancel.cancelled and ctx.frame_count > 0:
            try:
                if write is not None:
                    write(ctx)
                else:
                    ctx.write(output, fmt)
            except Exception:
                pass  # the scoring error is the one to report
        raise


def _is_stdin(source) -> bool:
    return isinstance(source, (str, os.PathLike)) and os.fspath(source) == "-"


def _run(ctx: Context, ref: Optional[_Input], dist: _Input,
         pushed: Dict[int, Dict[str, float]], progress,
         cancel: Canceller) -> Tuple[int, int, Optional[int]]:
    """Reads every frame pair into ``ctx``; returns the frames read, the last count given to
    ``progress`` (the frames whose scores are in: Context.frames_done, which never waits,
    fewer than the frames read while frames are in flight) and the total expected."""
    model_keys = {key for m in ctx.models for key in m.features}
    total = dist.total if ref is None else (dist.total or ref.total)
    # Frames that stay as they are (the readers' fresh buffers, a sequence's
    # frames) are kept by the library instead of copied for frames in
    # flight; a generator may refill one array, so its frames are copied.
    keep = dist.frames_stay and (ref is None or ref.frames_stay)
    if keep and ctx.picture_memory is not None:
        # The readers read each frame into the memory the models' device reads the
        # pictures from (pinned): sent from there, no copy of them on the host.
        for side in (dist, ref):
            if side is not None and hasattr(side.reader, "allocate"):
                side.reader.allocate = ctx.picture_buffer
    index = 0
    while True:
        cancel.check(index)
        d = dist.next()
        r = ref.next() if ref is not None else None
        if d is None or (ref is not None and r is None):
            if ref is not None and (d is None) != (r is None):
                _raise_count_mismatch(ref, dist, index)
            break
        shape = dist.describe(d)
        if ref is not None:
            _check_match(ref.describe(r), shape, f" at frame {index}")
        for name, value in pushed.get(index, {}).items():
            if name not in model_keys:
                ctx.feature_append(name, index, value)
        ctx.read_pictures(r, d, index, bitdepth=shape[2], keep=keep)
        index += 1
        if progress is not None:
            told = ctx.frames_done()
            progress(told, total)
    if index == 0:
        raise ValueError(f"{dist.name}: no frames to score")
    return index, told if progress is not None else index, total


def _raise_count_mismatch(ref: _Input, dist: _Input, scored: int) -> None:
    # As libvmaf does, scoring stops at the first frame one side lacks: the
    # longer side is not read on (it may be an endless pipe), so only "at
    # least" its frames read so far are known.
    counts = {side.role: f"{scored} frames" if side.count == scored else
              f"at least {side.count} frames" for side in (ref, dist)}
    raise InputMismatchError(
        f"frame count mismatch: reference has {counts['reference']} but distorted has "
        f"{counts['distorted']} (reference: {ref.summary(counts['reference'])}; distorted: "
        f"{dist.summary(counts['distorted'])}); ref_offset / dist_offset (--ref-offset, "
        "--dist-offset) drop frames at the start of either side")

