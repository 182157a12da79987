"""Any container and codec FFmpeg's libraries decode, as :class:`vmafdnn.video.Frame` objects.

:class:`MediaReader` reads mp4, mkv, webm, mov, ts, ... (H.264, HEVC, AV1,
VP9, ProRes, FFV1, ...) through PyAV, whose wheels bundle FFmpeg's libraries.
:func:`vmafdnn.video.open_video` hands it every input that is neither Y4M nor
raw YUV, so callers rarely construct it themselves.

Frames keep the source's own bit depth and chroma layout: planar YUV (8-16
bit, 4:2:0/4:2:2/4:4:4, full or limited range, with or without alpha) and
gray are handed on as numpy views of the decoder's own buffers -- the row
stride is FFmpeg's ``line_size``, nothing is copied. Other layouts (NV12,
P010, RGB, 4:1:1 ...) are converted once by swscale to the smallest planar
format that holds them without loss of luma (RGB has no luma, so that one
conversion is the colour-space change itself).

FFmpeg's own frame threads already decode ahead of the frame handed out. A
reader thread on top (``prefetch`` frames, off by default) did not help on
the 2-core machines here: scoring 1080p H.264 with it ran at 0.84-1.01x the
speed without it (bench/bench_decode.py), so it is there for hosts where the
decoder cannot thread, not switched on by default.
"""
from __future__ import annotations

import os
import queue
import re
import threading
from fractions import Fraction
from typing import Callable, Iterable, Iterator, Optional, Tuple

import numpy as np

from .frames import Frame, FrameReader, VideoFormatError, format_label

__all__ = ["MediaReader", "scale_frames", "pyav_missing_reason", "DEFAULT_PREFETCH"]

#: Frames decoded ahead of the consumer in a thread by default (0: no thread).
DEFAULT_PREFETCH = 0

# Planar layouts whose planes are used as they are: Y, U, V (an alpha plane,
# if any, is simply not looked at). Full-range (yuvj) samples have the same
# layout; range only matters to how the samples are interpreted.
_DIRECT_YUV_RE = re.compile(r"(?:yuvj?|yuva)(420|422|444)p(?:([0-9]{1,2})le)?")
_DIRECT_GRAY_RE = re.compile(r"gray(?:([0-9]{1,2})le)?")
# FFmpeg's demuxers for text art (ANSI, BinText, XBin, ...) claim files by
# extension alone (.bin, .txt, .ans): anything would "decode" as a picture of
# characters. A video to score is never one of them.
_TEXT_DEMUXERS = frozenset({"tty", "bin", "xbin", "adf", "idf"})
# Bit depths swscale has planar YUV and gray formats for.
_TARGET_DEPTHS = (8, 9, 10, 12, 14, 16)


def pyav_missing_reason() -> Optional[str]:
    """None when PyAV can be imported, else why not and what to install."""
    try:
        import av  # noqa: F401
    except ImportError as e:
        return (f"decoding containers (mp4, mkv, ...) needs PyAV, which failed to import "
                f"({e}): pip install av")
    return None


def _import_av():
    reason = pyav_missing_reason()
    if reason is not None:
        raise VideoFormatError(reason)
    import av
    return av


def _direct_layout(name: str, luma_bits: int) -> Optional[Tuple[str, int]]:
    """(chroma, bitdepth) when frames in pixel format ``name`` can be viewed as they are."""
    m = _DIRECT_YUV_RE.fullmatch(name)
    if m is not None:
        chroma, depth = m.group(1), int(m.group(2) or 8)
    else:
        m = _DIRECT_GRAY_RE.fullmatch(name)
        if m is None:
            return None
        chroma, depth = "400", int(m.group(1) or 8)
    # yuv420p10le has 10 bits in a 16-bit word, as the Frame expects; a
    # format whose descriptor disagrees with its name is not trusted.
    if depth != luma_bits or not 8 <= depth <= 16:
        return None
    return chroma, depth


def _conversion_target(fmt) -> str:
    """The planar format that keeps ``fmt``'s luma and chroma resolution and its depth."""
    colour = [c for c in fmt.components if not c.is_alpha]
    bits = max(c.bits for c in colour)
    depth = next((d for d in _TARGET_DEPTHS if d >= bits), 16)
    if len(colour) == 1:
        return format_label("400", depth)
    luma = next((c for c in colour if c.is_luma), None)
    chroma_c = [c for c in colour if not c.is_luma]
    if fmt.is_rgb or luma is None or not chroma_c or not luma.width or not chroma_c[0].width:
        return format_label("444", depth)
    wdiv = -(-luma.width // chroma_c[0].width)
    hdiv = -(-luma.height // chroma_c[0].height)
    chroma = {(2, 2): "420", (2, 1): "422", (1, 1): "444"}.get((wdiv, hdiv), "444")
    return format_label(chroma, depth)


def _plane_view(plane, width: int, height: int, dtype: np.dtype) -> np.ndarray:
    """A (height, width) view of one of PyAV's planes; rows are line_size bytes apart."""
    itemsize = dtype.itemsize
    if plane.line_size < width * itemsize or plane.line_size % itemsize:
        raise VideoFormatError(f"unexpected plane layout: line size {plane.line_size} for "
                               f"{width} samples of {itemsize} bytes")
    flat = np.frombuffer(plane, dtype=dtype)
    return flat[:height * (plane.line_size // itemsize)].reshape(
        height, plane.line_size // itemsize)[:, :width]


def _frame_from_av(vf, index: int) -> Frame:
    """A Frame viewing ``vf``'s planes (a direct layout: see _direct_layout)."""
    layout = _direct_layout(vf.format.name, vf.format.components[0].bits)
    chroma, depth = layout
    dtype = np.dtype(np.uint8) if depth == 8 else np.dtype("<u2")
    planes = [_plane_view(vf.planes[0], vf.width, vf.height, dtype)]
    if chroma != "400":
        c = vf.format.components[1]
        planes += [_plane_view(vf.planes[k], c.width, c.height, dtype) for k in (1, 2)]
    else:
        planes += [None, None]
    if not dtype.isnative:  # big-endian hosts: the Frame holds native uint16
        planes = [None if p is None else p.astype(np.uint16) for p in planes]
    return Frame(planes[0], planes[1], planes[2], depth, index, chroma)


def _packed(frame: Frame, allocate: Callable[[int], np.ndarray]) -> Frame:
    """``frame``'s planes copied into one buffer from ``allocate`` (size -> 1-D uint8 array),
    each plane's rows back to back: the decoder's rows are padded, so a model on a GPU would copy
    each plane into its own pinned memory first; from such a buffer (vmafdnn.Context.
    picture_buffer) every model sends it from where it lies."""
    planes = [p for p in frame.planes() if p is not None]
    buf = allocate(sum(p.nbytes for p in planes))
    out, at = [], 0
    for p in planes:
        view = buf[at:at + p.nbytes].view(p.dtype).reshape(p.shape)
        view[...] = p
        out.append(view)
        at += p.nbytes
    out += [None] * (3 - len(out))
    return Frame(out[0], out[1], out[2], frame.bitdepth, frame.index, frame.chroma)


class MediaReader(FrameReader):
    """Frames of the first video stream of ``source`` (a path or a binary file object).

    ``threads`` is FFmpeg's decoder thread count (0: one
    per core); ``prefetch`` the number of frames decoded ahead in a thread
    (0: decode in the caller's thread).

    Attributes, known at open: width, height (after scaling), chroma,
    bitdepth, pix_fmt (FFmpeg's name, as decoded), codec, container, kind
    ("h264 in mov,mp4,..."), fps
    (Fraction or None), frame_count (from the container, an estimate from
    the duration, or None), frames_read. Errors are VideoFormatError naming
    the source.
    """

    def __init__(self, source, *, name: Optional[str] = None,
                 threads: int = 0,
                 prefetch: int = DEFAULT_PREFETCH):
        av = _import_av()
        self._av = av
        if isinstance(source, (str, os.PathLike)):
            self.name = name or os.fspath(source)
        else:
            shown = getattr(source, "name", None)
            self.name = name or (shown if isinstance(shown, str) else "<stream>")
        self.frames_read = 0
        # Where each decoded frame is copied, rows packed: a callable size -> writable 1-D
        # uint8 array (vmafdnn.Context.picture_buffer, a GPU's pinned memory); None: the
        # frames are views of the decoder's own buffers. Read by the decode thread.
        self.allocate: Optional[Callable[[int], np.ndarray]] = None
        self._thread = None
        self._closed = False
        self._file = None  # a file object open_video handed over, closed with the reader
        try:
            self._container = av.open(source if not isinstance(source, os.PathLike)
                                      else os.fspath(source), mode="r")
        except av.error.FFmpegError as e:
            raise VideoFormatError(self._no_video(e)) from None
        try:
            self._open_stream(threads)
        except BaseException:
            self._container.close()
            raise
        self._frames = self._decode()
        if prefetch > 0:
            self._frames = self._start_prefetch(prefetch)

    def _no_video(self, error) -> str:
        return (f"{self.name}: not a Y4M stream, and FFmpeg's libraries cannot decode it "
                f"({getattr(error, 'strerror', None) or error})")

    def _open_stream(self, threads: int) -> None:
        if self._container.format.name in _TEXT_DEMUXERS:
            raise VideoFormatError(
                f"{self.name}: not a Y4M stream, and FFmpeg's libraries cannot decode it "
                f"(only its {self._container.format.name} text-art reader takes it, by the "
                "file name's extension)")
        if not self._container.streams.video:
            raise VideoFormatError(f"{self.name}: the {self._container.format.name} container "
                                   "has no video stream")
        stream = self._container.streams.video[0]
        self._stream = stream
        ctx = stream.codec_context
        # Frame threading decodes several frames at once: the bulk of the
        # speed-up for H.264/HEVC; slice threading covers the rest.
        stream.thread_type = "AUTO"
        ctx.thread_count = int(threads)
        self.codec = ctx.name
        self.container = self._container.format.name
        self.kind = f"{self.codec} in {self.container}"
        rate = stream.average_rate or stream.guessed_rate
        self.fps = Fraction(rate) if rate else None
        self.frame_count = stream.frames or self._estimated_frames(stream)
        # The first frame fixes what is known at open (geometry, depth);
        # it is kept and handed out first.
        try:
            first = next(self._raw_frames(), None)
        except VideoFormatError:
            raise
        if first is None:
            raise VideoFormatError(f"{self.name}: the {self.codec} stream has no frames")
        self._first = first
        self.pix_fmt = first.format.name
        converted = self._convert(first, 0)
        self.width, self.height = converted.width, converted.height
        self.chroma, self.bitdepth = converted.chroma, converted.bitdepth

    def _estimated_frames(self, stream) -> Optional[int]:
        """Frames from the duration (mkv and webm carry no count): for progress only."""
        rate = stream.average_rate or stream.guessed_rate
        if stream.duration and stream.time_base and rate:
            return max(1, round(float(stream.duration * stream.time_base * rate)))
        if self._container.duration and rate:
            return max(1, round(self._container.duration / 1_000_000 * float(rate)))
        return None

    def _raw_frames(self) -> Iterator:
        """PyAV's VideoFrames, decode errors turned into VideoFormatError."""
        av = self._av
        if not hasattr(self, "_packets"):
            self._packets = self._container.decode(self._stream)
        while True:
            try:
                vf = next(self._packets)
            except StopIteration:
                return
            except av.error.FFmpegError as e:
                raise VideoFormatError(f"{self.name}: frame {self.frames_read}: "
                                       f"{self.codec} decode error: {e}") from None
            yield vf

    def _convert(self, vf, index: int) -> Frame:
        fmt = vf.format
        if _direct_layout(fmt.name, fmt.components[0].bits) is None:
            vf = vf.reformat(format=_conversion_target(fmt))
        frame = _frame_from_av(vf, index)
        allocate = self.allocate
        return frame if allocate is None else _packed(frame, allocate)

    def _decode(self) -> Iterator[Frame]:
        pending = self._first
        self._first = None
        yield self._convert(pending, 0)
        index = 1
        for vf in self._raw_frames():
            yield self._convert(vf, index)
            index += 1

    # -- prefetch -----------------------------------------------------------
    def _start_prefetch(self, depth: int) -> Iterator[Frame]:
        q: "queue.Queue" = queue.Queue(maxsize=depth)
        stop = threading.Event()
        frames = self._frames
        done = object()

        def work():
            try:
                for frame in frames:
                    while not stop.is_set():
                        try:
                            q.put(frame, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                item = done
            except BaseException as e:  # handed to the consumer, raised there
                item = e
            while not stop.is_set():
                try:
                    q.put(item, timeout=0.1)
                    return
                except queue.Full:
                    continue

        self._stop = stop
        self._thread = threading.Thread(target=work, name=f"vmafdnn-decode {self.name}",
                                        daemon=True)
        self._thread.start()

        def consume():
            while True:
                item = q.get()
                if item is done:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        return consume()

    # -- reader protocol ----------------------------------------------------
    def read_frame(self) -> Optional[Frame]:
        """The next frame, or None at the end of the stream."""
        if self._closed:
            raise ValueError(f"{self.name}: read from a closed reader")
        frame = next(self._frames, None)
        if frame is not None:
            self.frames_read += 1
        return frame

    def close(self) -> None:
        """Stops the decode thread (waiting for it) and closes the container."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
        self._container.close()
        if self._file is not None:
            self._file.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _to_av_frame(av, frame: Frame):
    """Copies a Frame into a new PyAV VideoFrame of the same layout."""
    vf = av.VideoFrame(frame.width, frame.height, format_label(frame.chroma, frame.bitdepth))
    for plane, data in zip(vf.planes, frame.planes()):
        dtype = np.dtype(np.uint8) if frame.bitdepth == 8 else np.dtype("<u2")
        h, w = data.shape
        view = np.frombuffer(plane, dtype=dtype)
        view[:h * (plane.line_size // dtype.itemsize)].reshape(
            h, plane.line_size // dtype.itemsize)[:, :w] = data
    return vf


def scale_frames(frames: Iterable[Frame], width: int, height: int) -> Iterator[Frame]:
    """Frames scaled to width x height (bicubic, same layout and depth); others pass through.

    Works for every source (Y4M, raw YUV, containers); a
    :class:`MediaReader`'s frames are scaled the same way (copied into an
    FFmpeg frame first: a memcpy beside the scaling itself).
    """
    av = None
    for frame in frames:
        if isinstance(frame, Frame) and (frame.width, frame.height) != (width, height):
            av = av or _import_av()
            if frame.bitdepth not in _TARGET_DEPTHS:
                raise VideoFormatError(f"frame {frame.index}: cannot scale {frame.bitdepth}-bit "
                                       "samples (FFmpeg scales 8, 9, 10, 12, 14 and 16 bit)")
            vf = _to_av_frame(av, frame).reformat(width=width, height=height,
                                                  interpolation="BICUBIC")
            scaled = _frame_from_av(vf, frame.index)
            frame = scaled
        elif not isinstance(frame, Frame):
            plane = np.asarray(frame)
            if plane.ndim == 2 and plane.shape != (height, width):
                raise VideoFormatError(
                    "scaling needs Frame objects (or a file); got a bare "
                    f"{plane.shape[1]}x{plane.shape[0]} array")
        yield frame
