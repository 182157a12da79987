"""vmafdnn.score(): score a distorted clip (against a reference) in one call.

Sources are Y4M or raw YUV files, "-" (Y4M on stdin), binary file objects,
or iterables of :class:`vmafdnn.video.Frame` objects or 2-D numpy luma
planes. Frames stream through a :class:`vmafdnn.Context` one pair at a time,
so memory does not grow with the clip's length.
"""
import errno
import io
import itertools
import json
import math
import operator
import os
import stat
import sys
import threading
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import models as _builtin
from .context import Context, format_for_path
from .errors import RunCancelledError
from .video import Frame, VideoFormatError, Y4MReader, describe_reader, open_video

__all__ = ["score", "Canceller", "InputMismatchError", "UsageError", "load_features",
           "refuse_overwrite", "DEFAULT_FR_MODELS", "DEFAULT_NR_MODELS",
           "MAX_FEATURES_FILE_BYTES"]

#: Largest features file load_features() reads: it is parsed whole, so an
#: endless source (``--features /dev/zero``, a pipe that never closes) must
#: end in an error, not in the OOM killer. A libvmaf JSON report of a
#: two-hour 60 fps clip with 20 metrics is about 350 MB.
MAX_FEATURES_FILE_BYTES = 1 << 30

#: Built-in models used when ``models`` is None (the C library's default sets).
DEFAULT_FR_MODELS = tuple(_builtin.default_models())
DEFAULT_NR_MODELS = tuple(_builtin.default_models(no_reference=True))


class InputMismatchError(ValueError):
    """Reference and distorted disagree in frame size, bit depth or frame count."""


class UsageError(ValueError):
    """The arguments cannot work together (both inputs on stdin, raw YUV without
    its geometry, a reference given with no_reference=True, ...)."""


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
        elif isinstance(source, (np.ndarray, Iterable)) and not isinstance(source, (str, bytes)):
            self.name = f"{role} frames"
            if isinstance(source, np.ndarray) and source.ndim == 3:
                self.total = source.shape[0]
            elif isinstance(source, Sequence):
                self.total = len(source)
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


def _file_identity(source):
    """What names the file ``source`` (a path or an open file object) writes
    or reads: (device, inode) of an existing regular file, the resolved path
    of one that does not exist yet; None for stdin, pipes, devices and
    iterables, which a report cannot overwrite."""
    try:
        if isinstance(source, (str, bytes, os.PathLike)):
            if os.fsdecode(source) == "-":
                return None
            try:
                st = os.stat(source)
            except FileNotFoundError:
                return os.path.realpath(source)
        elif hasattr(source, "fileno"):
            st = os.fstat(source.fileno())
        else:
            return None
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def refuse_overwrite(output, what: str, inputs: Dict[str, object]) -> None:
    """Raises UsageError when ``output`` (a path about to be written) is the
    same file as one of ``inputs`` ({role: source}, sources or other
    outputs), whatever the spelling: ``-o ref.y4m`` would replace the
    reference with a report (existing files are compared by device and inode,
    so links and relative paths are caught too)."""
    if output is None:
        return
    target = _file_identity(output)
    if target is None:
        return
    for role, source in inputs.items():
        if source is not None and _file_identity(source) == target:
            raise UsageError(f"the {what} {os.fsdecode(output)} is also the {role}; writing it "
                             "would destroy that: choose another path")


def _offset(value, name: str) -> int:
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if not 0 <= value <= sys.maxsize:
        raise UsageError(f"{name} must be 0..{sys.maxsize} frames, got {value}")
    return value


def load_features(path) -> Dict[int, Dict[str, float]]:
    """Per-frame metrics of a libvmaf JSON report: {frameNum: {name: value}}
    (null values become NaN). At most MAX_FEATURES_FILE_BYTES are read."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            raw = f.read(MAX_FEATURES_FILE_BYTES + 1)
        if len(raw) > MAX_FEATURES_FILE_BYTES:
            raise ValueError(f"features file {name} is larger than {MAX_FEATURES_FILE_BYTES} "
                             "bytes (MAX_FEATURES_FILE_BYTES); an endless source such as a "
                             "device or an open pipe is not a report")
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"features file {name}: not UTF-8 text ({e.reason})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"features file {name}: invalid JSON: {e}") from None
    frames = data.get("frames") if isinstance(data, dict) else None
    if not isinstance(frames, list):
        raise ValueError(f"features file {name}: expected a libvmaf JSON report with a "
                         "\"frames\" array")
    out: Dict[int, Dict[str, float]] = {}
    for k, frame in enumerate(frames):
        where = f"features file {name}: frames[{k}]"
        if not isinstance(frame, dict):
            raise ValueError(f"{where} is not an object")
        num, metrics = frame.get("frameNum"), frame.get("metrics")
        if not isinstance(num, int) or isinstance(num, bool) or num < 0:
            raise ValueError(f"{where}: \"frameNum\" must be a non-negative integer, got {num!r}")
        if not isinstance(metrics, dict):
            raise ValueError(f"{where}: \"metrics\" must be an object")
        if num in out:
            raise ValueError(f"{where}: frame {num} appears twice")
        values = {}
        for key, value in metrics.items():
            if value is None:
                value = math.nan
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{where}: metric {key!r} is not a number: {value!r}")
            values[key] = float(value)
        out[num] = values
    return out


def _model_list(models, no_reference: bool) -> List:
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
          **policy) -> Dict[str, object]:
    """Scores ``distorted`` (against ``reference``) with tiny models.

    ``reference`` / ``distorted``: a Y4M or raw YUV path, any container and
    codec FFmpeg's libraries decode (mp4, mkv, webm, ...: recognised by
    content, decoded through PyAV), "-" (stdin, one side only), a binary file
    object, or an iterable of Frames or 2-D numpy luma planes (uint8; uint16
    with ``bitdepth``). ``reference`` None (or ``no_reference=True``) scores
    no-reference models only. Raw YUV needs ``width``, ``height``,
    ``pix_fmt`` (420, 422, 444, 400) and ``bitdepth``.

    ``models``: .onnx paths or built-in names; None means the library's default
    set, DEFAULT_FR_MODELS (psnr_y, ssim_y and, where it was built, vmaf), or
    DEFAULT_NR_MODELS (sharpness_nr) without a reference. ``device``, ``device_index``,
    ``threads``, ``fp16_io``, ``resize`` and ``batch`` (frames per ONNX Runtime Run for
    models that can take several; see :class:`Context`) configure every model.
    ``features``: a libvmaf JSON report whose per-frame metrics are fed to
    feature-vector models and appear in the report (metrics named like a
    model's output are skipped: the model computes them).
    ``progress(frames_done, total_or_None)`` is called after every frame.
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
    (``fmt`` json, xml or csv; default from the extension, else json) -- also
    when scoring fails part-way, with the frames scored so far, before the
    error is raised (not after a cancellation).

    Raises InputMismatchError (a ValueError) when reference and distorted
    differ in size, bit depth, frame rate or frame count (the message
    describes both inputs; a count mismatch stops at the first frame one
    input lacks, reading at most one frame past the shorter one), UsageError (a ValueError) for
    arguments that cannot work together (an ``output`` that is one of the
    input files is refused before anything is read), VideoFormatError for malformed
    video, and the DnnError subclasses of the C library (bad model, missing
    feature, ...).
    """
    if reference is not None and no_reference:
        raise UsageError("no_reference=True scores the distorted input alone: give no "
                         "reference")
    no_reference = reference is None
    if _is_stdin(reference) and _is_stdin(distorted):
        raise UsageError("reference and distorted cannot both be read from stdin ('-')")
    out_fmt = format_for_path(output, fmt) if output is not None or fmt is not None else None
    refuse_overwrite(output, "report", {"reference input": reference,
                                        "distorted input": distorted,
                                        "features file": features})
    ref_offset, dist_offset = _offset(ref_offset, "ref_offset"), _offset(dist_offset,
                                                                          "dist_offset")
    pushed = load_features(features) if features is not None else {}
    model_list = _model_list(models, no_reference)

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
                     fp16_io=fp16_io, resize=resize, fps=fps, batch=batch, **policy) as ctx:
            cancel.watch(ctx)
            try:
                for model in model_list:
                    ctx.use_model(model, no_reference=no_reference)
                score_frames(ctx, ref, dist, pushed, progress, cancel, output, out_fmt)
                result = ctx.report()
                cancel.check(len(result["frames"]))
                if output is not None:
                    ctx.write(output, out_fmt)
            finally:
                cancel.unwatch(ctx)
        return result
    finally:
        for side in inputs:
            side.close()


def score_frames(ctx, ref, dist, pushed, progress, cancel, output=None, fmt=None) -> None:
    """Scores every frame pair into ``ctx`` and flushes it. When that fails
    (not when cancelled) and ``output`` is given, the frames scored before
    the failure are written there, for a look, and the error is raised."""
    try:
        _run(ctx, ref, dist, pushed, progress, cancel)
        ctx.flush()
    except BaseException:
        if output is not None and not cancel.cancelled and ctx.frame_count > 0:
            try:
                ctx.write(output, fmt)
            except Exception:
                pass  # the scoring error is the one to report
        raise


def _is_stdin(source) -> bool:
    return isinstance(source, (str, os.PathLike)) and os.fspath(source) == "-"


def _run(ctx: Context, ref: Optional[_Input], dist: _Input,
         pushed: Dict[int, Dict[str, float]], progress, cancel: Canceller) -> None:
    model_keys = {key for m in ctx.models for key in m.features}
    total = dist.total if ref is None else (dist.total or ref.total)
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
        ctx.read_pictures(r, d, index, bitdepth=shape[2])
        index += 1
        if progress is not None:
            progress(index, total)
    if index == 0:
        raise ValueError(f"{dist.name}: no frames to score")


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

