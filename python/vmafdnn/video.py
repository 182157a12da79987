"""Frame readers and a writer for the clips that vmafdnn scores.

Sources: YUV4MPEG2 (Y4M) files or streams (``-`` is stdin, so
``ffmpeg -i x.mp4 -f yuv4mpegpipe - | vmafdnn -d - ...`` works) and raw planar
YUV files whose geometry comes from the command line, as with libvmaf's
``vmaf`` tool. Samples above 8 bits are little-endian 16-bit words in both.
:func:`open_video` sends everything else (mp4, mkv, webm ...) to
:mod:`vmafdnn.media`, which decodes it through PyAV.

Every frame is read with one ``readinto`` into a single buffer; the planes of
a :class:`Frame` are numpy views into that buffer, never copies. Input is
treated as hostile: each malformed header, truncated frame or out-of-range
sample raises :class:`VideoFormatError` naming the source and what is wrong,
and a header cannot make the reader allocate more than one bounded frame.

Only numpy and the standard library are imported (PyAV only when a container
is opened), so this module also works before the rest of the package is built.
"""

from __future__ import annotations

import io
import operator
import os
import re
import stat
import sys
from fractions import Fraction
from typing import BinaryIO, Callable, Iterable, Iterator, Optional, Union

import numpy as np

from ._native import lib
from .frames import Frame, FrameReader, VideoFormatError, format_label
from .paths import std_stream

__all__ = [
    "VideoFormatError",
    "Frame",
    "Y4MReader",
    "RawYUVReader",
    "open_video",
    "frames_from_arrays",
    "describe_reader",
    "write_y4m",
    "MAX_DIMENSION",
    "MAX_AREA",
]

# A lying header must not be able to make us allocate gigabytes: even at
# these caps a 16-bit 4:4:4 frame is 1.5 GiB, so nothing larger is allowed.
# The size limit is the C library's (VMAF_DNN_MAX_DIMENSION).
MAX_DIMENSION = lib.VMAF_DNN_MAX_DIMENSION
MAX_AREA = 1 << 28

# Stream and frame header lines are short; a line this long without a
# newline means the input is not Y4M (or is corrupt), not that we should
# keep buffering.
MAX_HEADER_LINE = 1024

Y4M_MAGIC = b"YUV4MPEG2"
_FRAME_MAGIC = b"FRAME"

PathOrFile = Union[str, "os.PathLike[str]", BinaryIO]


_PLANE_NAMES = ("Y", "U", "V")
_CHROMA_KINDS = ("420", "422", "444", "400")


def _chroma_shape(chroma: str, width: int, height: int) -> Optional[tuple]:
    if chroma == "420":
        return ((height + 1) // 2, (width + 1) // 2)
    if chroma == "422":
        return (height, (width + 1) // 2)
    if chroma == "444":
        return (height, width)
    return None


def _sample_dtype(bitdepth: int) -> np.dtype:
    return np.dtype(np.uint8) if bitdepth == 8 else np.dtype("<u2")


def _check_dimension(name: str, what: str, value: int) -> None:
    if not 1 <= value <= MAX_DIMENSION:
        shown = str(value) if len(str(value)) <= 12 else str(value)[:12] + "..."
        raise VideoFormatError(
            f"{name}: {what} {shown} is out of range: must be between 1 and {MAX_DIMENSION}")


def _check_geometry(name: str, width: int, height: int) -> None:
    _check_dimension(name, "width", width)
    _check_dimension(name, "height", height)
    if width * height > MAX_AREA:
        raise VideoFormatError(
            f"{name}: frame size {width}x{height} exceeds the limit of "
            f"{MAX_AREA} luma samples")


def _range_error(name: str, index: int, plane: str, found: int, bitdepth: int) -> VideoFormatError:
    return VideoFormatError(
        f"{name}: frame {index}: {plane} plane has sample value {found}, above "
        f"the {bitdepth}-bit maximum {(1 << bitdepth) - 1}")


def _check_planes_in_range(name: str, index: int, bitdepth: int, planes) -> None:
    """Reject samples that do not fit the declared bit depth (one max per plane)."""
    if bitdepth in (8, 16):
        return
    for plane_name, plane in zip(_PLANE_NAMES, planes):
        found = int(plane.max())
        if found >= (1 << bitdepth):
            raise _range_error(name, index, plane_name, found, bitdepth)


class _Layout:
    """Byte layout of one planar frame and how to view a buffer as a Frame."""

    def __init__(self, width: int, height: int, chroma: str, bitdepth: int):
        self.width = width
        self.height = height
        self.chroma = chroma
        self.bitdepth = bitdepth
        self.dtype = _sample_dtype(bitdepth)
        cshape = _chroma_shape(chroma, width, height)
        self.shapes = [(height, width)] + ([cshape, cshape] if cshape else [])
        self.frame_bytes = sum(h * w for h, w in self.shapes) * self.dtype.itemsize

    def describe(self) -> str:
        return f"{self.width}x{self.height}, {self.chroma}, {self.bitdepth}-bit"

    def wrap(self, buf: np.ndarray, index: int, name: str) -> Frame:
        """View the uint8 buffer ``buf`` (frame_bytes long) as a Frame."""
        samples = buf.view(self.dtype)
        if self.dtype.itemsize == 2:
            if sys.byteorder == "big":
                samples = samples.byteswap(inplace=True).view(np.uint16)
            else:
                samples = samples.view(np.uint16)
            # One max over the whole frame is cheaper than one per plane; the
            # per-plane pass only runs to name the culprit.
            if self.bitdepth < 16 and int(samples.max()) >= (1 << self.bitdepth):
                self._raise_range_error(samples, index, name)
        planes = []
        offset = 0
        for h, w in self.shapes:
            planes.append(samples[offset:offset + h * w].reshape(h, w))
            offset += h * w
        if len(planes) == 1:
            planes += [None, None]
        return Frame(planes[0], planes[1], planes[2], self.bitdepth, index, self.chroma)

    def _raise_range_error(self, samples: np.ndarray, index: int, name: str) -> None:
        offset = 0
        for plane_name, (h, w) in zip(_PLANE_NAMES, self.shapes):
            found = int(samples[offset:offset + h * w].max())
            if found >= (1 << self.bitdepth):
                raise _range_error(name, index, plane_name, found, self.bitdepth)
            offset += h * w


def _source_name(obj) -> str:
    name = getattr(obj, "name", None)
    return name if isinstance(name, str) else "<stream>"


def _open_input(source) -> tuple:
    """Returns (binary file object, display name, whether we own it)."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if path == "-":
            return std_stream(written=False), "<stdin>", False
        return open(path, "rb"), path, True
    if isinstance(source, io.TextIOBase):
        raise ValueError(f"{_source_name(source)}: video input needs a binary file object, "
                         "not a text stream (use .buffer)")
    if not hasattr(source, "read"):
        raise TypeError("expected a path, '-' or a binary file object, "
                        f"got {type(source).__name__}")
    return source, _source_name(source), False


class _Reader(FrameReader):
    """Shared frame loop: per-frame header (if any), then one exact read."""

    # A raw file may end at any frame boundary; a Y4M frame that has a
    # FRAME header must also have its samples.
    _eof_before_samples_is_clean = True

    def __init__(self, source: PathOrFile, reuse_buffer: bool):
        self._f, self.name, self._owned = _open_input(source)
        self._readinto = getattr(self._f, "readinto", None)
        self._reuse_buffer = reuse_buffer
        self._buf: Optional[np.ndarray] = None
        # Where a frame's bytes go: a callable size -> writable 1-D uint8 array
        # (vmafdnn.Context.picture_buffer: the memory a GPU reads the pictures from);
        # None: a numpy array of its own.
        self.allocate: Optional[Callable[[int], np.ndarray]] = None
        self.frames_read = 0
        self._layout: Optional[_Layout] = None

    def _set_layout(self, layout: _Layout) -> None:
        self._layout = layout
        self.width = layout.width
        self.height = layout.height
        self.chroma = layout.chroma
        self.bitdepth = layout.bitdepth
        self.frame_bytes = layout.frame_bytes

    def _begin_frame(self) -> bool:
        """Consume what precedes a frame's samples; False at a clean end of stream."""
        return True

    def read_frame(self) -> Optional[Frame]:
        """The next frame, or None at a clean end of stream."""
        index = self.frames_read
        if not self._begin_frame():
            return None
        size = self._layout.frame_bytes
        if self._reuse_buffer and self._buf is not None:
            buf = self._buf
        else:
            buf = (np.empty(size, dtype=np.uint8) if self.allocate is None
                   else self.allocate(size))
            if self._reuse_buffer:
                self._buf = buf
        got = self._read_exact(memoryview(buf))
        if got == 0 and self._eof_before_samples_is_clean:
            return None
        if got < size:
            raise self._truncated(index, got)
        self.frames_read += 1
        return self._layout.wrap(buf, index, self.name)

    def _truncated(self, index: int, got: int) -> VideoFormatError:
        size = self._layout.frame_bytes
        return VideoFormatError(
            f"{self.name}: frame {index} is truncated: got {got} of {size} bytes "
            f"({size - got} missing) for a {self._layout.describe()} frame")

    def _read_exact(self, view: memoryview) -> int:
        """Fill ``view`` across short reads (pipes); returns bytes read (< len only at EOF)."""
        filled, size = 0, len(view)
        while filled < size:
            if self._readinto is not None:
                n = self._readinto(view[filled:])
            else:
                chunk = self._f.read(size - filled)
                n = len(chunk) if chunk else 0
                view[filled:filled + n] = chunk
            if not n:
                break
            filled += n
        return filled

    def _readline(self) -> bytes:
        """One line of at most MAX_HEADER_LINE bytes, newline included when found."""
        readline = getattr(self._f, "readline", None)
        if readline is not None:
            return readline(MAX_HEADER_LINE)
        out = bytearray()
        while len(out) < MAX_HEADER_LINE:
            byte = self._f.read(1)
            if not byte:
                break
            out += byte
            if byte == b"\n":
                break
        return bytes(out)

    def _adopt(self, name: str, owned: bool) -> None:
        """Takes over a file that open_video opened (and peeked) for this reader."""
        self.name, self._owned = name, owned

    def close(self) -> None:
        """Closes the file if this reader opened it (never stdin or a caller's object)."""
        if self._owned:
            self._owned = False
            self._f.close()


# Colour-space tags: FFmpeg writes 420jpeg/420mpeg2/420paldv, 422, 444 and
# mono for 8 bits, and <chroma>p<N> / mono<N> above that (its demuxer knows
# N = 9, 10, 12, 14, 16; we take any N in 9..16). Each is mirrored in upper
# case by the XYSCSS extension, which old writers emit without a C tag.
_COLORSPACES_8BIT = {"420jpeg": "420", "420mpeg2": "420", "420paldv": "420", "420": "420",
                     "422": "422", "444": "444", "mono": "400"}
_COLORSPACE_DEEP_RE = re.compile(r"(420|422|444)p([0-9]{1,2})|mono([0-9]{1,2})")
_COLORSPACES_UNSUPPORTED = {"411": "4:1:1 chroma", "444alpha": "4:4:4 with an alpha plane"}


def _parse_colorspace(name: str, tag: str, param: str) -> tuple:
    """(chroma, bitdepth) for a C or lower-cased XYSCSS value; ``param`` quotes it."""
    if tag in _COLORSPACES_8BIT:
        return _COLORSPACES_8BIT[tag], 8
    if tag in _COLORSPACES_UNSUPPORTED:
        raise VideoFormatError(
            f"{name}: Y4M colour space {param} ({_COLORSPACES_UNSUPPORTED[tag]}) is not "
            "supported; convert to 4:2:0, 4:2:2, 4:4:4 or gray first "
            "(e.g. ffmpeg -pix_fmt yuv420p)")
    m = _COLORSPACE_DEEP_RE.fullmatch(tag)
    if m is None:
        raise VideoFormatError(
            f"{name}: unknown Y4M colour space {param}; supported: 420jpeg, 420mpeg2, "
            "420paldv, 420, 422, 444, mono and 420pN, 422pN, 444pN, monoN for N = 9..16")
    bitdepth = int(m.group(2) or m.group(3))
    if not 9 <= bitdepth <= 16:
        raise VideoFormatError(
            f"{name}: Y4M colour space {param} has bit depth {bitdepth}; "
            "the suffixed forms take 9..16 (8-bit has no suffix)")
    return m.group(1) or "400", bitdepth


_INTERLACE_NAMES = {"t": "top field first", "b": "bottom field first", "m": "mixed"}


class Y4MReader(_Reader):
    """Reads a YUV4MPEG2 stream from a path, a binary file object or "-" (stdin).

    Works on non-seekable pipes. Attributes: width, height, chroma ("420",
    "422", "444", "400"), bitdepth, fps (Fraction, None when unknown),
    pixel_aspect (Fraction or None), colorspace (the C tag as written, or
    None), extensions (the X parameters as a dict), frame_bytes, frames_read.

    With ``reuse_buffer=True`` every frame is read into the same buffer, so a
    frame's arrays are overwritten by the next read; keep the default unless
    each frame is consumed before the next is read.
    """

    _eof_before_samples_is_clean = False
    kind = "Y4M"

    def __init__(self, source: PathOrFile, *, reuse_buffer: bool = False):
        super().__init__(source, reuse_buffer)
        try:
            self._parse_stream_header()
        except BaseException:
            self.close()
            raise

    def _parse_stream_header(self) -> None:
        line = self._readline()
        if not line:
            raise VideoFormatError(f"{self.name}: empty input, expected a Y4M stream "
                                   "starting with magic 'YUV4MPEG2'")
        after_magic = line[len(Y4M_MAGIC):len(Y4M_MAGIC) + 1]
        if not line.startswith(Y4M_MAGIC) or after_magic not in (b" ", b"\n", b""):
            raise VideoFormatError(f"{self.name}: not a Y4M stream: expected magic "
                                   f"'YUV4MPEG2', got {line[:len(Y4M_MAGIC) + 1]!r}")
        if not line.endswith(b"\n"):
            if len(line) >= MAX_HEADER_LINE:
                raise VideoFormatError(f"{self.name}: Y4M stream header has no newline "
                                       f"within {MAX_HEADER_LINE} bytes")
            raise VideoFormatError(f"{self.name}: input ends inside the Y4M stream header")
        try:
            text = line[len(Y4M_MAGIC):-1].decode("ascii")
        except UnicodeDecodeError:
            raise VideoFormatError(f"{self.name}: Y4M stream header is not ASCII") from None
        control = next((c for c in text if c < " " or c == "\x7f"), None)
        if control is not None:
            # Before, a CR LF line end reached the colour-space check and its
            # message ("unknown Y4M colour space C420jpeg\r") broke in two.
            hint = (" (a CR LF line end: Y4M header lines end with LF alone)"
                    if control == "\r" and text.endswith("\r") else "")
            raise VideoFormatError(f"{self.name}: Y4M stream header holds the control "
                                   f"character {control!r}{hint}")

        params = {}
        self.extensions = {}
        for token in text.split(" "):
            if not token:
                continue
            key, value = token[0], token[1:]
            if key == "X":
                xkey, _, xvalue = value.partition("=")
                self.extensions[xkey] = xvalue
            elif key in "WHFIAC":
                if key in params:
                    raise VideoFormatError(f"{self.name}: Y4M stream header repeats {key}")
                params[key] = value
            else:
                raise VideoFormatError(f"{self.name}: unknown Y4M stream header "
                                       f"parameter {token!r}")

        width = self._parse_dimension(params, "W", "width")
        height = self._parse_dimension(params, "H", "height")
        _check_geometry(self.name, width, height)

        interlace = params.get("I", "p")
        if interlace in _INTERLACE_NAMES:
            raise VideoFormatError(
                f"{self.name}: interlaced Y4M (I{interlace}, {_INTERLACE_NAMES[interlace]}) "
                "is not supported: only progressive (Ip) video is scored; deinterlace "
                "first (e.g. ffmpeg -vf bwdif)")
        if interlace not in ("p", "?"):
            raise VideoFormatError(f"{self.name}: invalid Y4M interlace parameter I{interlace}")
        self.interlace = interlace

        self.fps = self._parse_ratio(params, "F", "frame rate")
        self.pixel_aspect = self._parse_ratio(params, "A", "pixel aspect")

        self.colorspace = params.get("C")
        if self.colorspace is not None:
            chroma, bitdepth = _parse_colorspace(self.name, self.colorspace, f"C{self.colorspace}")
        elif "YSCSS" in self.extensions:
            xyscss = self.extensions["YSCSS"]
            chroma, bitdepth = _parse_colorspace(self.name, xyscss.lower(), f"XYSCSS={xyscss}")
        else:
            chroma, bitdepth = "420", 8  # the Y4M default, 420jpeg
        self._set_layout(_Layout(width, height, chroma, bitdepth))

    def _parse_dimension(self, params: dict, key: str, what: str) -> int:
        if key not in params:
            raise VideoFormatError(f"{self.name}: Y4M stream header has no {key} ({what}) "
                                   "parameter")
        value = params[key]
        if not re.fullmatch(r"-?[0-9]+", value):
            raise VideoFormatError(f"{self.name}: Y4M {what} {key}{value} is not a decimal integer")
        return int(value)

    def _parse_ratio(self, params: dict, key: str, what: str) -> Optional[Fraction]:
        """``n:d`` as a Fraction; 0:0 (or any zero term) means unknown."""
        if key not in params:
            return None
        m = re.fullmatch(r"([0-9]{1,12}):([0-9]{1,12})", params[key])
        if m is None:
            raise VideoFormatError(f"{self.name}: Y4M {what} {key}{params[key]} is not of "
                                   "the form n:d with non-negative integers")
        num, den = int(m.group(1)), int(m.group(2))
        return Fraction(num, den) if num and den else None

    def _begin_frame(self) -> bool:
        index = self.frames_read
        line = self._readline()
        if not line:
            return False
        head = line[:len(_FRAME_MAGIC) + 1]
        if not (b"FRAME\n".startswith(head) or b"FRAME ".startswith(head)):
            raise VideoFormatError(f"{self.name}: frame {index}: expected a 'FRAME' header, "
                                   f"got {line[:16]!r}")
        if not line.endswith(b"\n"):
            if len(line) >= MAX_HEADER_LINE:
                raise VideoFormatError(f"{self.name}: frame {index} header has no newline "
                                       f"within {MAX_HEADER_LINE} bytes")
            raise VideoFormatError(f"{self.name}: input ends inside frame {index}'s header "
                                   f"(got {line[:16]!r})")
        return True


_RAW_FMT_RE = re.compile(r"(?:yuv)?(420|422|444)(?:p(?:([0-9]+)(le|be)?)?)?"
                         r"|(?:gray|mono|400)(?:([0-9]+)(le|be)?)?")


def _as_int(what: str, value) -> int:
    """Python and numpy integers pass; floats and strings from a careless caller do not."""
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"{what} must be an integer, got {value!r}") from None


def _parse_raw_pix_fmt(pix_fmt: str) -> tuple:
    """(chroma, bitdepth or None) for "420", "yuv420p", "yuv420p10le", "gray12" ..."""
    m = _RAW_FMT_RE.fullmatch(str(pix_fmt).lower())
    if m is None:
        raise ValueError(f"unknown pixel format {pix_fmt!r}: use 420, 422, 444 or 400 "
                         "(or yuv420p, yuv420p10le, gray ...)")
    chroma = m.group(1) or "400"
    digits = m.group(2) or m.group(4)
    endian = m.group(3) or m.group(5)
    if endian == "be":
        raise ValueError(f"pixel format {pix_fmt!r}: big-endian samples are not supported; "
                         "raw input above 8 bits is little-endian 16-bit")
    if digits is None:
        # "yuv420p" / "gray" name an 8-bit format; bare "420" leaves it open.
        named_8bit = str(pix_fmt).lower().startswith(("yuv", "gray", "mono"))
        return chroma, 8 if named_8bit else None
    return chroma, int(digits)


class RawYUVReader(_Reader):
    """Reads headerless planar YUV (libvmaf's raw input) with caller-given geometry.

    ``pix_fmt`` is "420", "422", "444" or "400" (aliases such as "yuv420p",
    "yuv420p10le", "gray10" are accepted and may imply ``bitdepth``).
    Samples above 8 bits are little-endian 16-bit words. For a regular file
    a size that is not a whole number of frames is reported at open, before
    any frame is scored; ``frame_count`` is then known (None for pipes).
    """

    kind = "raw YUV"

    def __init__(self, source: PathOrFile, width: int, height: int, pix_fmt: str = "420",
                 bitdepth: Optional[int] = None, *, reuse_buffer: bool = False):
        chroma, implied = _parse_raw_pix_fmt(pix_fmt)
        if bitdepth is None:
            bitdepth = implied
        if bitdepth is None:
            raise ValueError(f"pixel format {pix_fmt!r} needs a bit depth (--bitdepth, 8..16)")
        if implied is not None and bitdepth != implied:
            raise ValueError(f"pixel format {pix_fmt!r} is {implied}-bit but bit depth "
                             f"{bitdepth} was given")
        width, height, bitdepth = (_as_int(what, value) for what, value in
                                   (("width", width), ("height", height), ("bit depth", bitdepth)))
        if not 8 <= bitdepth <= 16:
            raise ValueError(f"bit depth {bitdepth} is out of range: must be 8..16")
        _check_geometry("raw YUV", width, height)
        super().__init__(source, reuse_buffer)
        self._set_layout(_Layout(width, height, chroma, bitdepth))
        self.frame_count = self._whole_file_frame_count()

    def _whole_file_frame_count(self) -> Optional[int]:
        try:
            st = os.fstat(self._f.fileno())
            here = self._f.tell()
        except (AttributeError, OSError, io.UnsupportedOperation):
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        remaining = st.st_size - here
        count, tail = divmod(remaining, self.frame_bytes)
        if tail:
            err = self._truncated(count, tail)
            self.close()
            raise VideoFormatError(f"{err}; check --width/--height/--pixel_format/--bitdepth")
        return count


def _peek_magic(f, size: int = len(Y4M_MAGIC)) -> Optional[bytes]:
    """Up to ``size`` first bytes of ``f`` without consuming them, or None if that is impossible."""
    peek = getattr(f, "peek", None)
    if peek is not None:
        try:
            return peek(size)[:size]
        except (OSError, ValueError):
            pass
    try:
        if f.seekable():
            pos = f.tell()
            head = f.read(size)
            f.seek(pos)
            return head
    except (AttributeError, OSError):
        pass
    return None


# Signatures of containers that raw YUV geometry must not override (a mixed
# pair: -w/-h/-p given for a raw reference, the distorted an mp4). Raw
# samples could match a short signature by chance, so only long ones are here.
_CONTAINER_SIGNATURES = (
    (4, b"ftyp"),               # mp4, mov, 3gp, heif
    (0, b"\x1a\x45\xdf\xa3"),   # Matroska, WebM
    (0, b"DKIF"),               # IVF (VP8, VP9, AV1)
    (0, b"OggS"),
    (0, b"\x00\x00\x01\xba"),   # MPEG program stream
)


def _is_container(head: bytes) -> bool:
    if head[:4] == b"RIFF" and head[8:12] == b"AVI ":
        return True
    return any(head[at:at + len(sig)] == sig for at, sig in _CONTAINER_SIGNATURES)


def open_video(source: PathOrFile, width: Optional[int] = None, height: Optional[int] = None,
               pix_fmt: Optional[str] = None, bitdepth: Optional[int] = None, *,
               reuse_buffer: bool = False, prefetch: Optional[int] = None):
    """A reader for ``source`` (a path, "-" for stdin, or a binary file), chosen by content.

    Input that starts with the YUV4MPEG2 magic is Y4M. Without raw geometry
    (``width``, ``height``, ``pix_fmt``), anything else is decoded by FFmpeg's
    libraries through PyAV (:class:`vmafdnn.media.MediaReader`: mp4, mkv,
    webm, mov ... in any codec they decode; ``prefetch`` frames are decoded
    ahead in a thread). With raw geometry it is raw YUV, which needs width,
    height, pix_fmt and bitdepth (bitdepth may be implied by pix_fmt). A
    stream that cannot be peeked (or is empty) is Y4M unless raw geometry
    is given. Geometry given for a Y4M or decoded input must agree with it.
    """
    raw_given = any(value is not None for value in (width, height, pix_fmt))
    f, name, owned = _open_input(source)
    try:
        head = _peek_magic(f, 16)
        if head:
            # A pipe may peek fewer bytes than the magic; a matching prefix is Y4M.
            # A *.y4m name given raw geometry is meant as Y4M: its error says so.
            head, container = head[:len(Y4M_MAGIC)], _is_container(head)
            is_y4m = Y4M_MAGIC.startswith(head) or (
                raw_given and not container and name.lower().endswith(".y4m"))
            raw_given = raw_given and not container
        else:
            # Unpeekable, or empty: Y4M unless raw geometry was given.
            is_y4m = name.lower().endswith(".y4m") or width is None
        if is_y4m:
            reader = Y4MReader(f, reuse_buffer=reuse_buffer)
            reader.name = name
            _check_header_matches(reader, width, height, pix_fmt, bitdepth)
        elif not raw_given:
            reader = _open_media(f, name, owned, prefetch)
            if owned and getattr(reader, "_file", None) is not f:
                f.close()
            try:
                _check_header_matches(reader, width, height, pix_fmt, bitdepth)
            except BaseException:
                reader.close()
                raise
            return reader
        else:
            missing = [opt for opt, value in (("--width (-w)", width), ("--height (-h)", height),
                                              ("--pixel_format (-p)", pix_fmt)) if value is None]
            if missing:
                raise ValueError(f"{name}: raw YUV input needs {', '.join(missing)}"
                                 " (and --bitdepth (-b)); it has no Y4M header")
            reader = RawYUVReader(f, width, height, pix_fmt, bitdepth, reuse_buffer=reuse_buffer)
    except BaseException:
        if owned:
            f.close()
        raise
    reader._adopt(name, owned)
    return reader


def _open_media(f, name: str, owned: bool, prefetch: Optional[int]):
    """A MediaReader for what open_video could not read as Y4M (imported late:
    this module works without PyAV and the rest of the package)."""
    try:
        from . import media
    except ImportError:  # this file loaded on its own (the fuzz harness): no decoder
        raise VideoFormatError(f"{name}: not a Y4M stream (no 'YUV4MPEG2' magic), and "
                               "vmafdnn.media, which decodes other containers, is not "
                               "loaded") from None
    kwargs = {} if prefetch is None else {"prefetch": prefetch}
    # A regular file goes to FFmpeg's own file I/O, through the descriptor
    # already open (the file peeked and checked, never whatever the name
    # means by now); a pipe or a stream object through Python, with the
    # bytes its peek read (before, a container in a pipe given by name,
    # `-d <(cat x.mkv)`, was opened again by FFmpeg and lost its first bytes).
    source = _descriptor_path(f)
    try:
        reader = media.MediaReader(source or f, name=name, **kwargs)
    except VideoFormatError as e:
        if name.lower().endswith((".yuv", ".raw")):
            # Named as raw YUV, given no geometry: the arguments are what is
            # missing (a ValueError, like the other raw-geometry errors).
            reason = str(e).split(", and ", 1)[-1]
            raise ValueError(f"{name}: raw YUV input needs --width (-w), --height (-h), "
                             "--pixel_format (-p) (and --bitdepth (-b)); it has no Y4M "
                             f"header, and {reason}") from None
        raise
    if source is None and owned:
        reader._file = f  # read through Python: the reader closes it
    return reader


def _descriptor_path(f) -> Optional[str]:
    """``/proc/self/fd/N`` for a file object at its start whose descriptor N
    is a regular file (opening it opens that very file, whatever its name
    names now), else None (a pipe, a stream object, a file read from
    elsewhere than its start, a system without /proc)."""
    try:
        fd = f.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode) or f.tell() != 0:
            return None
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    path = f"/proc/self/fd/{fd}"
    return path if os.path.exists(path) else None


def describe_reader(reader, frames: Optional[str] = None) -> str:
    """One line on what a reader holds, for errors that compare two inputs:
    "1920x1080 yuv420p10le, 25 fps, 250 frames, h264 in mp4". ``frames``
    replaces the count the reader knows at open (None: unknown)."""
    fmt = getattr(reader, "pix_fmt", None) or format_label(reader.chroma, reader.bitdepth)
    fps = getattr(reader, "fps", None)
    rate = "unknown fps" if fps is None else f"{float(fps):.6g} fps"
    if frames is None:
        count = getattr(reader, "frame_count", None)
        frames = "unknown frame count" if count is None else f"{count} frames"
    return f"{reader.width}x{reader.height} {fmt}, {rate}, {frames}, {reader.kind}"


def _check_header_matches(reader, width, height, pix_fmt, bitdepth) -> None:
    wanted = {"width": width, "height": height, "bitdepth": bitdepth}
    if pix_fmt is not None:
        wanted["chroma"], implied = _parse_raw_pix_fmt(pix_fmt)
        if wanted["bitdepth"] is None:
            wanted["bitdepth"] = implied
    for attr, value in wanted.items():
        if value is not None and value != getattr(reader, attr):
            raise ValueError(f"{reader.name}: {reader.kind} header says {attr} "
                             f"{getattr(reader, attr)} but {value} was given")


def frames_from_arrays(planes: Iterable[np.ndarray],
                       bitdepth: Optional[int] = None) -> Iterator[Frame]:
    """Monochrome Frames from 2-D integer luma planes (uint8, or uint16 with ``bitdepth``).

    Planes are used as they are when C-contiguous (copied otherwise). Every
    plane must have the first one's shape and dtype; uint16 samples are
    checked against ``bitdepth``. Errors name the plane's index.
    """
    first = None
    for index, plane in enumerate(planes):
        plane = np.asarray(plane)
        if plane.ndim != 2:
            raise ValueError(f"plane {index}: expected a 2-D luma array, got shape {plane.shape}")
        if plane.dtype == np.uint8:
            depth = 8 if bitdepth is None else bitdepth
            if depth != 8:
                raise ValueError(f"plane {index}: uint8 samples are 8-bit, not {depth}-bit")
        elif plane.dtype == np.uint16:
            if bitdepth is None:
                raise ValueError("uint16 planes need an explicit bitdepth (9..16)")
            if not 9 <= bitdepth <= 16:
                raise ValueError(f"bit depth {bitdepth} is out of range for uint16 planes: "
                                 "must be 9..16")
            depth = bitdepth
        else:
            raise ValueError(f"plane {index}: dtype {plane.dtype} is not supported; "
                             "use uint8 or uint16 integer samples")
        if first is None:
            _check_geometry(f"plane {index}", plane.shape[1], plane.shape[0])
            first = plane
        elif plane.shape != first.shape or plane.dtype != first.dtype:
            raise ValueError(f"plane {index}: {plane.shape} {plane.dtype} differs from plane 0's "
                             f"{first.shape} {first.dtype}")
        _check_planes_in_range("frames_from_arrays", index, depth, (plane,))
        yield Frame(np.ascontiguousarray(plane), None, None, depth, index, "400")


def _colorspace_tag(chroma: str, bitdepth: int) -> str:
    if chroma == "400":
        return "mono" if bitdepth == 8 else f"mono{bitdepth}"
    if bitdepth == 8:
        return "420jpeg" if chroma == "420" else chroma
    return f"{chroma}p{bitdepth}"


def _check_frame_for_writing(frame: Frame, ref: _Layout, index: int) -> None:
    """``frame`` must have the stream's geometry, plane shapes, dtypes and sample range."""
    if (frame.width, frame.height, frame.chroma, frame.bitdepth) != \
            (ref.width, ref.height, ref.chroma, ref.bitdepth):
        raise ValueError(f"write_y4m: frame {index} ({frame.width}x{frame.height}, "
                         f"{frame.chroma}, {frame.bitdepth}-bit) differs from the stream "
                         f"({ref.describe()})")
    planes = frame.planes()
    if len(planes) != len(ref.shapes) or any(
            p is None or p.shape != shape or p.dtype.kind != "u"
            or p.dtype.itemsize != ref.dtype.itemsize
            for p, shape in zip(planes, ref.shapes)):
        got = [None if p is None else f"{p.shape} {p.dtype}" for p in planes]
        raise ValueError(f"write_y4m: frame {index}: planes {got} do not fit a "
                         f"{ref.describe()} frame (expected shapes {ref.shapes})")
    _check_planes_in_range("write_y4m", index, frame.bitdepth, planes)


def write_y4m(target: PathOrFile, frames: Iterable[Frame],
              fps: Union[Fraction, int, float, str] = Fraction(25)) -> int:
    """Writes ``frames`` as a progressive Y4M stream; returns the number written.

    ``target`` is a path, "-" for stdout, or a binary file object (left
    open). The header follows the first frame; FFmpeg reads the result
    (bit depths other than 8/9/10/12/14/16 only by this module). An empty
    ``frames`` writes nothing at all, since the header needs a geometry.
    """
    rate = Fraction(fps) if not isinstance(fps, float) else Fraction(fps).limit_denominator(1001000)
    if rate <= 0:
        raise ValueError(f"fps must be positive, got {fps!r}")
    if isinstance(target, (str, os.PathLike)) and os.fspath(target) == "-":
        f, owned = std_stream(written=True), False
    elif isinstance(target, (str, os.PathLike)):
        f, owned = open(target, "wb"), True
    else:
        f, owned = target, False
    count = 0
    try:
        layout = None
        for frame in frames:
            if layout is None:
                if frame.chroma not in _CHROMA_KINDS:
                    raise ValueError(f"write_y4m: unknown chroma {frame.chroma!r}: "
                                     f"expected one of {', '.join(_CHROMA_KINDS)}")
                if not 8 <= frame.bitdepth <= 16:
                    raise ValueError(f"write_y4m: bit depth {frame.bitdepth} is out of range 8..16")
                _check_geometry("write_y4m", frame.width, frame.height)
                layout = _Layout(frame.width, frame.height, frame.chroma, frame.bitdepth)
                tag = _colorspace_tag(frame.chroma, frame.bitdepth)
                f.write(f"YUV4MPEG2 W{frame.width} H{frame.height} F{rate.numerator}:"
                        f"{rate.denominator} Ip A1:1 C{tag}\n".encode("ascii"))
            _check_frame_for_writing(frame, layout, count)
            f.write(_FRAME_MAGIC + b"\n")
            for plane in frame.planes():
                if plane.dtype.itemsize == 2:
                    plane = plane.astype("<u2", copy=False)
                f.write(np.ascontiguousarray(plane).data)
            count += 1
        f.flush()
    finally:
        if owned:
            f.close()
    return count
