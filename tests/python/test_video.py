"""Tests for vmafdnn.video: Y4M / raw YUV readers, the Y4M writer, hostile input."""

import io
import os
import subprocess
import sys
import threading
from fractions import Fraction

import numpy as np
import pytest

from vmafdnn import video

VideoFormatError = video.VideoFormatError

CHROMA_SHAPES_33x17 = {"420": (9, 17), "422": (17, 17), "444": (17, 33), "400": None}


def make_frame(width, height, chroma, bitdepth, index=0, seed=0):
    """A Frame of random in-range samples."""
    rng = np.random.default_rng(seed + 1000 * index)
    dtype = np.uint8 if bitdepth == 8 else np.uint16
    top = 1 << bitdepth

    def plane(shape):
        return rng.integers(0, top, size=shape, dtype=np.uint32).astype(dtype)

    cshape = {"420": ((height + 1) // 2, (width + 1) // 2),
              "422": (height, (width + 1) // 2),
              "444": (height, width)}.get(chroma)
    u = plane(cshape) if cshape else None
    v = plane(cshape) if cshape else None
    return video.Frame(plane((height, width)), u, v, bitdepth, index, chroma)


def y4m_bytes(frames, fps=25):
    buf = io.BytesIO()
    video.write_y4m(buf, frames, fps=fps)
    return buf.getvalue()


def header_only(params, frame_size=0, frames=0, fill=b"\x00"):
    """A hand-made stream: header line, then `frames` FRAMEs of `frame_size` bytes."""
    return (b"YUV4MPEG2 " + params + b"\n"
            + (b"FRAME\n" + fill * frame_size) * frames)


def read_all(data, **kw):
    return list(video.Y4MReader(io.BytesIO(data), **kw))


def root_buffer(arr):
    while isinstance(arr, np.ndarray) and arr.base is not None:
        arr = arr.base
    return arr


def assert_same_planes(got, want):
    """The same format and, plane by plane, the same samples of the same dtype and shape."""
    assert (got.width, got.height, got.chroma, got.bitdepth) == \
        (want.width, want.height, want.chroma, want.bitdepth)
    for g, w in zip(got.planes(), want.planes()):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def assert_frames_equal(got, want):
    assert_same_planes(got, want)
    assert (got.u is None) == (want.u is None)


# ---------------------------------------------------------------- round trips

@pytest.mark.parametrize("bitdepth", [8, 9, 10, 12, 14, 16])
@pytest.mark.parametrize("chroma", ["420", "422", "444", "400"])
def test_round_trip_odd_size(chroma, bitdepth, tmp_path):
    frames = [make_frame(33, 17, chroma, bitdepth, index=i) for i in range(3)]
    path = tmp_path / "clip.y4m"
    assert video.write_y4m(path, frames, fps=Fraction(30000, 1001)) == 3
    with video.Y4MReader(path) as reader:
        assert (reader.width, reader.height) == (33, 17)
        assert reader.chroma == chroma and reader.bitdepth == bitdepth
        assert reader.fps == Fraction(30000, 1001)
        got = list(reader)
        assert reader.read_frame() is None  # stays at EOF
    assert [f.index for f in got] == [0, 1, 2]
    for g, w in zip(got, frames):
        assert_frames_equal(g, w)
        if chroma != "400":
            assert g.u.shape == CHROMA_SHAPES_33x17[chroma]
        assert g.y.dtype == (np.uint8 if bitdepth == 8 else np.uint16)


@pytest.mark.parametrize("chroma,bitdepth,tag", [
    ("420", 8, b"C420jpeg"), ("422", 8, b"C422"), ("444", 8, b"C444"), ("400", 8, b"Cmono"),
    ("420", 10, b"C420p10"), ("422", 12, b"C422p12"), ("444", 16, b"C444p16"),
    ("400", 10, b"Cmono10"), ("400", 16, b"Cmono16"),
])
def test_writer_uses_ffmpeg_colourspace_tags(chroma, bitdepth, tag):
    data = y4m_bytes([make_frame(4, 2, chroma, bitdepth)])
    header = data.split(b"\n", 1)[0]
    assert header == b"YUV4MPEG2 W4 H2 F25:1 Ip A1:1 " + tag


@pytest.mark.parametrize("w,h", [(1, 1), (2, 1), (1, 3), (2, 2)])
def test_round_trip_tiny_sizes(w, h):
    frames = [make_frame(w, h, "420", 10)]
    got = read_all(y4m_bytes(frames))
    assert got[0].u.shape == ((h + 1) // 2, (w + 1) // 2)
    assert_frames_equal(got[0], frames[0])


def test_planes_are_views_into_one_buffer():
    frame = read_all(y4m_bytes([make_frame(33, 17, "420", 10)]))[0]
    root = root_buffer(frame.y)
    assert root is root_buffer(frame.u) is root_buffer(frame.v)
    assert frame.y.flags.c_contiguous and frame.u.flags.c_contiguous


def test_each_frame_has_its_own_buffer_by_default():
    frames = [make_frame(8, 4, "420", 8, index=i) for i in range(2)]
    got = read_all(y4m_bytes(frames))
    assert root_buffer(got[0].y) is not root_buffer(got[1].y)
    assert_frames_equal(got[0], frames[0])  # not overwritten by frame 1


def test_reuse_buffer_overwrites_previous_frame():
    frames = [make_frame(8, 4, "420", 8, index=i) for i in range(2)]
    reader = video.Y4MReader(io.BytesIO(y4m_bytes(frames)), reuse_buffer=True)
    first = reader.read_frame()
    second = reader.read_frame()
    assert root_buffer(first.y) is root_buffer(second.y)
    np.testing.assert_array_equal(first.y, frames[1].y)


# ---------------------------------------------------------- header parsing

@pytest.mark.parametrize("tag,chroma,bitdepth", [
    ("420jpeg", "420", 8), ("420paldv", "420", 8), ("420mpeg2", "420", 8), ("420", "420", 8),
    ("422", "422", 8), ("444", "444", 8), ("mono", "400", 8),
    ("420p9", "420", 9), ("420p10", "420", 10), ("422p10", "422", 10), ("444p10", "444", 10),
    ("420p12", "420", 12), ("422p12", "422", 12), ("444p12", "444", 12),
    ("420p14", "420", 14), ("444p14", "444", 14),
    ("420p16", "420", 16), ("422p16", "422", 16), ("444p16", "444", 16),
    ("mono9", "400", 9), ("mono10", "400", 10), ("mono12", "400", 12), ("mono16", "400", 16),
])
def test_colourspace_tags(tag, chroma, bitdepth):
    reader = video.Y4MReader(io.BytesIO(header_only(b"W6 H4 F25:1 Ip A0:0 C" + tag.encode())))
    assert (reader.chroma, reader.bitdepth, reader.colorspace) == (chroma, bitdepth, tag)
    samples = 24 + 2 * {"420": 6, "422": 12, "444": 24, "400": 0}[chroma]
    assert reader.frame_bytes == samples * (1 if bitdepth == 8 else 2)


def test_ffmpeg_style_header_with_extensions():
    reader = video.Y4MReader(io.BytesIO(header_only(
        b"W1920 H1080 F30000:1001 Ip A1:1 C420p10 XYSCSS=420P10 XCOLORRANGE=LIMITED")))
    assert (reader.width, reader.height, reader.bitdepth) == (1920, 1080, 10)
    assert reader.fps == Fraction(30000, 1001)
    assert reader.pixel_aspect == 1
    assert reader.extensions == {"YSCSS": "420P10", "COLORRANGE": "LIMITED"}


def test_defaults_when_optional_params_are_missing():
    reader = video.Y4MReader(io.BytesIO(header_only(b"W4 H2")))
    assert (reader.chroma, reader.bitdepth) == ("420", 8)  # 420jpeg
    assert reader.fps is None and reader.pixel_aspect is None and reader.colorspace is None


def test_unknown_rate_and_aspect_are_none():
    reader = video.Y4MReader(io.BytesIO(header_only(b"W4 H2 F0:0 A0:0 I?")))
    assert reader.fps is None and reader.pixel_aspect is None and reader.interlace == "?"


def test_xyscss_is_used_without_c_tag():
    reader = video.Y4MReader(io.BytesIO(header_only(b"W4 H2 XYSCSS=422P12")))
    assert (reader.chroma, reader.bitdepth) == ("422", 12)


def test_c_tag_wins_over_xyscss():
    reader = video.Y4MReader(io.BytesIO(header_only(b"W4 H2 C444 XYSCSS=420JPEG")))
    assert (reader.chroma, reader.bitdepth) == ("444", 8)


def test_frame_header_parameters_are_accepted():
    data = b"YUV4MPEG2 W2 H2 Cmono\nFRAME Ip XFOO=1\n\x01\x02\x03\x04"
    frames = read_all(data)
    np.testing.assert_array_equal(frames[0].y, [[1, 2], [3, 4]])


def test_header_only_stream_has_no_frames():
    assert read_all(header_only(b"W4 H2 C420jpeg")) == []


# ---------------------------------------------------------- hostile input

@pytest.mark.parametrize("data,fragment", [
    (b"", "empty input, expected a Y4M stream starting with magic 'YUV4MPEG2'"),
    (b"RIFF\x00\x00\x00\x00WAVEfmt \n", "not a Y4M stream: expected magic 'YUV4MPEG2', got b'RIFF"),
    (b"YUV4MPEG3 W4 H2\n", "expected magic 'YUV4MPEG2'"),
    (b"YUV4MPEG2W4 H2\n", "expected magic 'YUV4MPEG2'"),
    (b"YUV4MPEG2 W4 H2", "input ends inside the Y4M stream header"),
    (b"YUV4MPEG2", "input ends inside the Y4M stream header"),
    (b"YUV4MPEG2 W4 H2 " + b"X" * 2000 + b"\n", "Y4M stream header has no newline within 1024 bytes"),
    (b"YUV4MPEG2 H2 C420jpeg\n", "Y4M stream header has no W (width) parameter"),
    (b"YUV4MPEG2 W4\n", "Y4M stream header has no H (height) parameter"),
    (b"YUV4MPEG2 W0 H2\n", "width 0 is out of range: must be between 1 and 32768"),
    (b"YUV4MPEG2 W4 H0\n", "height 0 is out of range: must be between 1 and 32768"),
    (b"YUV4MPEG2 W-4 H2\n", "width -4 is out of range"),
    (b"YUV4MPEG2 W4 H-2\n", "height -2 is out of range"),
    (b"YUV4MPEG2 W32769 H2\n", "width 32769 is out of range"),
    (b"YUV4MPEG2 W99999999999999999999999999 H2\n", "width 999999999999... is out of range"),
    (b"YUV4MPEG2 W4 H4294967297\n", "height 4294967297 is out of range"),
    (b"YUV4MPEG2 W32768 H32768\n", "frame size 32768x32768 exceeds the limit of 268435456 luma samples"),
    (b"YUV4MPEG2 W0x10 H2\n", "Y4M width W0x10 is not a decimal integer"),
    (b"YUV4MPEG2 W H2\n", "Y4M width W is not a decimal integer"),
    (b"YUV4MPEG2 W+4 H2\n", "Y4M width W+4 is not a decimal integer"),
    (b"YUV4MPEG2 W4 W8 H2\n", "Y4M stream header repeats W"),
    (b"YUV4MPEG2 W4 H2 Z7\n", "unknown Y4M stream header parameter 'Z7'"),
    (b"YUV4MPEG2 W4 H2 C420foo\n", "unknown Y4M colour space C420foo"),
    (b"YUV4MPEG2 W4 H2 Crgb\n", "unknown Y4M colour space Crgb"),
    (b"YUV4MPEG2 W4 H2 C\n", "unknown Y4M colour space C;"),
    (b"YUV4MPEG2 W4 H2 C420p8\n", "Y4M colour space C420p8 has bit depth 8"),
    (b"YUV4MPEG2 W4 H2 C420p17\n", "Y4M colour space C420p17 has bit depth 17"),
    (b"YUV4MPEG2 W4 H2 Cmono7\n", "Y4M colour space Cmono7 has bit depth 7"),
    (b"YUV4MPEG2 W4 H2 C411\n", "Y4M colour space C411 (4:1:1 chroma) is not supported"),
    (b"YUV4MPEG2 W4 H2 C444alpha\n", "C444alpha (4:4:4 with an alpha plane) is not supported"),
    (b"YUV4MPEG2 W4 H2 XYSCSS=NONE\n", "unknown Y4M colour space XYSCSS=NONE"),
    (b"YUV4MPEG2 W4 H2 It\n", "interlaced Y4M (It, top field first) is not supported: "
                              "only progressive (Ip) video is scored"),
    (b"YUV4MPEG2 W4 H2 Ib\n", "interlaced Y4M (Ib, bottom field first) is not supported"),
    (b"YUV4MPEG2 W4 H2 Im\n", "interlaced Y4M (Im, mixed) is not supported"),
    (b"YUV4MPEG2 W4 H2 Ix\n", "invalid Y4M interlace parameter Ix"),
    (b"YUV4MPEG2 W4 H2 F30\n", "Y4M frame rate F30 is not of the form n:d"),
    (b"YUV4MPEG2 W4 H2 F-30:1\n", "Y4M frame rate F-30:1 is not of the form n:d"),
    (b"YUV4MPEG2 W4 H2 Ax:y\n", "Y4M pixel aspect Ax:y is not of the form n:d"),
    (b"YUV4MPEG2 W4 H2 C\xc3\xa9\n", "Y4M stream header is not ASCII"),
])
def test_hostile_stream_header(data, fragment):
    with pytest.raises(VideoFormatError) as err:
        video.Y4MReader(io.BytesIO(data))
    assert fragment in str(err.value)
    assert isinstance(err.value, ValueError)


def test_error_names_the_file(tmp_path):
    path = tmp_path / "bad.y4m"
    path.write_bytes(b"YUV4MPEG2 W4 H2 It\n")
    with pytest.raises(VideoFormatError, match=r"bad\.y4m: interlaced"):
        video.Y4MReader(str(path))


@pytest.mark.parametrize("tail,fragment", [
    (b"FRAMX\n" + b"\0" * 12, "frame 1: expected a 'FRAME' header, got b'FRAMX\\n"),
    (b"FRAMES\n" + b"\0" * 12, "frame 1: expected a 'FRAME' header"),
    (b"\0" * 12, "frame 1: expected a 'FRAME' header"),
    (b"FRAME", "input ends inside frame 1's header"),
    (b"FRA", "input ends inside frame 1's header"),
    (b"FRAME " + b"X" * 2000 + b"\n", "frame 1 header has no newline within 1024 bytes"),
    (b"FRAME\n", "frame 1 is truncated: got 0 of 12 bytes (12 missing) for a 4x2, 420, 8-bit frame"),
    (b"FRAME\n" + b"\0" * 5, "frame 1 is truncated: got 5 of 12 bytes (7 missing)"),
])
def test_hostile_frames(tail, fragment):
    data = header_only(b"W4 H2 C420jpeg", frame_size=12, frames=1) + tail
    reader = video.Y4MReader(io.BytesIO(data))
    assert reader.read_frame().index == 0
    with pytest.raises(VideoFormatError) as err:
        reader.read_frame()
    assert fragment in str(err.value)


def test_truncated_last_frame_from_file(tmp_path):
    data = y4m_bytes([make_frame(33, 17, "422", 10, index=i) for i in range(3)])
    path = tmp_path / "cut.y4m"
    path.write_bytes(data[:-100])
    reader = video.Y4MReader(path)
    assert reader.read_frame() is not None and reader.read_frame() is not None
    frame_bytes = (33 * 17 + 2 * 17 * 17) * 2
    with pytest.raises(VideoFormatError, match=(
            rf"cut\.y4m: frame 2 is truncated: got {frame_bytes - 100} of {frame_bytes} "
            r"bytes \(100 missing\)")):
        reader.read_frame()
    reader.close()


@pytest.mark.parametrize("plane_index,plane_name", [(0, "Y"), (1, "U"), (2, "V")])
def test_out_of_range_sample_names_frame_and_plane(plane_index, plane_name):
    frames = [make_frame(6, 4, "420", 10, index=i) for i in range(2)]
    data = bytearray(y4m_bytes(frames))
    # Raise one sample of frame 1's chosen plane to 1024 (0x0400), just past 10 bits.
    header_len = data.index(b"\n") + 1
    frame_len = 6 + (6 * 4 + 2 * 3 * 2) * 2
    offsets = [0, 24 * 2, (24 + 6) * 2]
    at = header_len + frame_len + 6 + offsets[plane_index] + 2
    data[at:at + 2] = (1024).to_bytes(2, "little")
    reader = video.Y4MReader(io.BytesIO(bytes(data)))
    reader.read_frame()
    with pytest.raises(VideoFormatError,
                       match=rf"frame 1: {plane_name} plane has sample value 1024, "
                             r"above the 10-bit maximum 1023"):
        reader.read_frame()


def test_16bit_accepts_full_range():
    frame = video.Frame(np.full((2, 2), 65535, np.uint16), None, None, 16, 0, "400")
    got = read_all(y4m_bytes([frame]))
    assert int(got[0].y.max()) == 65535


def test_header_caps_limit_allocation():
    # The largest allowed frame is refused nothing at open and allocates only on read.
    reader = video.Y4MReader(io.BytesIO(header_only(b"W32768 H8192 Cmono")))
    assert reader.frame_bytes == 1 << 28


# ---------------------------------------------------------- pipes and stdin

def test_read_from_os_pipe_with_short_writes():
    frames = [make_frame(33, 17, "420", 12, index=i) for i in range(4)]
    data = y4m_bytes(frames)
    rfd, wfd = os.pipe()

    def writer():
        with os.fdopen(wfd, "wb", buffering=0) as w:
            for i in range(0, len(data), 7):
                w.write(data[i:i + 7])

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        # Unbuffered: every readinto/readline sees the pipe's short reads.
        with os.fdopen(rfd, "rb", buffering=0) as r:
            got = list(video.Y4MReader(r))
    finally:
        thread.join()
    assert len(got) == 4
    for g, w in zip(got, frames):
        assert_frames_equal(g, w)


def test_read_from_subprocess_pipe(tmp_path):
    frames = [make_frame(33, 17, "444", 8, index=i) for i in range(3)]
    path = tmp_path / "clip.y4m"
    video.write_y4m(path, frames)
    proc = subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE)
    try:
        got = list(video.open_video(proc.stdout))
    finally:
        proc.stdout.close()
        proc.wait()
    assert [f.index for f in got] == [0, 1, 2]
    assert_frames_equal(got[2], frames[2])


def test_truncated_frame_on_a_pipe():
    data = y4m_bytes([make_frame(8, 8, "420", 8)])[:-3]
    proc = subprocess.Popen([sys.executable, "-c",
                             "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    proc.stdin.write(data)
    proc.stdin.close()
    try:
        with pytest.raises(VideoFormatError, match=r"frame 0 is truncated: got 93 of 96 bytes \(3 missing\)"):
            list(video.Y4MReader(proc.stdout))
    finally:
        proc.stdout.close()
        proc.wait()


class _FakeStdin:
    def __init__(self, data):
        self.buffer = io.BufferedReader(io.BytesIO(data))


def test_dash_means_stdin(monkeypatch):
    frames = [make_frame(5, 3, "420", 10, index=i) for i in range(2)]
    fake = _FakeStdin(y4m_bytes(frames))
    monkeypatch.setattr(sys, "stdin", fake)
    with video.open_video("-") as reader:
        assert reader.name == "<stdin>"
        got = list(reader)
    assert not fake.buffer.closed  # never close the caller's stdin
    assert_frames_equal(got[1], frames[1])


def test_y4m_reader_dash(monkeypatch):
    monkeypatch.setattr(sys, "stdin", _FakeStdin(b"YUV4MPEG2 W4 Ib\n"))
    with pytest.raises(VideoFormatError, match=r"<stdin>: Y4M stream header has no H"):
        video.Y4MReader("-")


def test_raw_yuv_on_stdin(monkeypatch):
    frame = make_frame(4, 2, "420", 8)
    monkeypatch.setattr(sys, "stdin", _FakeStdin(b"".join(p.tobytes() for p in frame.planes())))
    got = list(video.open_video("-", width=4, height=2, pix_fmt="420", bitdepth=8))
    assert_frames_equal(got[0], frame)


def test_text_stream_is_rejected():
    with pytest.raises(ValueError, match="needs a binary file object"):
        video.Y4MReader(io.StringIO("YUV4MPEG2 W4 H2\n"))


class _ReadOnly:
    """A minimal file object: read() only, returning at most 5 bytes a call."""

    def __init__(self, data):
        self._data, self._pos = data, 0

    def read(self, n=-1):
        n = 5 if n < 0 else min(n, 5)
        chunk = self._data[self._pos:self._pos + n]
        self._pos += len(chunk)
        return chunk


def test_minimal_file_object_with_only_read():
    frames = [make_frame(7, 5, "422", 9, index=i) for i in range(2)]
    got = list(video.Y4MReader(_ReadOnly(y4m_bytes(frames))))
    assert len(got) == 2
    assert_frames_equal(got[1], frames[1])


# ---------------------------------------------------------- raw YUV

def raw_bytes(frames):
    out = bytearray()
    for frame in frames:
        for plane in frame.planes():
            out += plane.astype(plane.dtype.newbyteorder("<"), copy=False).tobytes()
    return bytes(out)


@pytest.mark.parametrize("pix_fmt,chroma,bitdepth", [
    ("420", "420", 8), ("422", "422", 10), ("444", "444", 16), ("400", "400", 12),
    ("yuv420p", "420", None), ("yuv420p10le", "420", None), ("yuv444p12le", "444", 12),
    ("gray", "400", None), ("gray10le", "400", None), ("YUV422P", "422", None),
])
def test_raw_round_trip(pix_fmt, chroma, bitdepth, tmp_path):
    depth = bitdepth or {"yuv420p10le": 10, "gray10le": 10}.get(pix_fmt, 8)
    frames = [make_frame(33, 17, chroma, depth, index=i) for i in range(3)]
    path = tmp_path / "clip.yuv"
    path.write_bytes(raw_bytes(frames))
    with video.RawYUVReader(path, 33, 17, pix_fmt, bitdepth) as reader:
        assert reader.frame_count == 3
        assert (reader.chroma, reader.bitdepth) == (chroma, depth)
        got = list(reader)
    assert len(got) == 3
    for g, w in zip(got, frames):
        assert_frames_equal(g, w)


def test_raw_size_mismatch_is_reported_at_open(tmp_path):
    path = tmp_path / "clip.yuv"
    path.write_bytes(b"\0" * (2 * 1600 + 100))  # 32x33 420 8-bit: 1056 + 2 * 16 * 17 bytes
    with pytest.raises(VideoFormatError, match=(
            r"clip\.yuv: frame 2 is truncated: got 100 of 1600 bytes \(1500 missing\) for a "
            r"32x33, 420, 8-bit frame; check --width/--height/--pixel_format/--bitdepth")):
        video.RawYUVReader(path, 32, 33, "420", 8)


def test_raw_truncated_on_a_stream():
    frame = make_frame(4, 4, "444", 10)
    data = raw_bytes([frame, frame])[:-1]
    reader = video.RawYUVReader(_ReadOnly(data), 4, 4, "444", 10)
    assert reader.frame_count is None
    reader.read_frame()
    with pytest.raises(VideoFormatError, match=r"frame 1 is truncated: got 95 of 96 bytes \(1 missing\)"):
        reader.read_frame()


def test_raw_out_of_range_sample():
    data = bytearray(raw_bytes([make_frame(4, 2, "420", 10)]))
    data[-2:] = (0xFFFF).to_bytes(2, "little")
    with pytest.raises(VideoFormatError, match=r"frame 0: V plane has sample value 65535, "
                                               r"above the 10-bit maximum 1023"):
        list(video.RawYUVReader(io.BytesIO(bytes(data)), 4, 2, "420", 10))


def test_raw_accepts_numpy_integers():
    reader = video.RawYUVReader(io.BytesIO(b"\x05" * 12), np.int64(4), np.int32(2), "420",
                                np.uint8(8))
    assert (reader.width, reader.height, reader.bitdepth) == (4, 2, 8)
    assert int(reader.read_frame().v[0, 1]) == 5


def test_raw_empty_file_has_no_frames(tmp_path):
    path = tmp_path / "empty.yuv"
    path.write_bytes(b"")
    with video.RawYUVReader(path, 4, 2, "420", 8) as reader:
        assert reader.frame_count == 0 and list(reader) == []


@pytest.mark.parametrize("kwargs,fragment", [
    (dict(width=4, height=2, pix_fmt="411", bitdepth=8), "unknown pixel format '411'"),
    (dict(width=4, height=2, pix_fmt="nv12", bitdepth=8), "unknown pixel format 'nv12'"),
    (dict(width=4, height=2, pix_fmt="420", bitdepth=None), "needs a bit depth (--bitdepth, 8..16)"),
    (dict(width=4, height=2, pix_fmt="420", bitdepth=7), "bit depth 7 is out of range: must be 8..16"),
    (dict(width=4, height=2, pix_fmt="420", bitdepth=17), "bit depth 17 is out of range"),
    (dict(width=4, height=2, pix_fmt="yuv420p10le", bitdepth=8), "is 10-bit but bit depth 8 was given"),
    (dict(width=4, height=2, pix_fmt="yuv420p10be", bitdepth=10), "big-endian samples are not supported"),
    (dict(width=4.0, height=2, pix_fmt="420", bitdepth=8), "width must be an integer"),
    (dict(width=4, height="2", pix_fmt="420", bitdepth=8), "height must be an integer, got '2'"),
    (dict(width=4, height=2, pix_fmt="420", bitdepth=10.0), "bit depth must be an integer"),
])
def test_raw_argument_errors(kwargs, fragment):
    with pytest.raises(ValueError) as err:
        video.RawYUVReader(io.BytesIO(b""), **kwargs)
    assert fragment in str(err.value)
    assert not isinstance(err.value, VideoFormatError)


@pytest.mark.parametrize("width,height,fragment", [
    (0, 2, "width 0 is out of range"),
    (4, -1, "height -1 is out of range"),
    (40000, 2, "width 40000 is out of range"),
    (32768, 16384, "exceeds the limit of 268435456 luma samples"),
])
def test_raw_geometry_bounds(width, height, fragment):
    with pytest.raises(VideoFormatError, match=fragment):
        video.RawYUVReader(io.BytesIO(b""), width, height, "420", 8)


# ---------------------------------------------------------- open_video

def test_open_video_detects_y4m_by_content(tmp_path):
    path = tmp_path / "looks_raw.yuv"
    video.write_y4m(path, [make_frame(4, 2, "420", 8)])
    with video.open_video(path) as reader:
        assert isinstance(reader, video.Y4MReader) and len(list(reader)) == 1


def test_open_video_y4m_extension_without_magic_is_an_error(tmp_path):
    path = tmp_path / "clip.y4m"
    path.write_bytes(b"\0" * 64)
    with pytest.raises(VideoFormatError, match=r"clip\.y4m: not a Y4M stream: expected magic"):
        video.open_video(path, width=4, height=2, pix_fmt="420", bitdepth=8)


def test_open_video_raw(tmp_path):
    frame = make_frame(6, 4, "422", 12)
    path = tmp_path / "clip.yuv"
    path.write_bytes(raw_bytes([frame]))
    with video.open_video(str(path), width=6, height=4, pix_fmt="422", bitdepth=12) as reader:
        assert isinstance(reader, video.RawYUVReader)
        assert_frames_equal(reader.read_frame(), frame)
        assert reader.read_frame() is None


@pytest.mark.parametrize("kwargs,fragment", [
    # Without any raw option the file is offered to FFmpeg's libraries first;
    # a *.yuv name they cannot decode asks for the geometry.
    ({}, "raw YUV input needs --width (-w), --height (-h), --pixel_format (-p) (and "
         "--bitdepth (-b)); it has no Y4M header, and FFmpeg's libraries cannot decode it"),
    (dict(height=2), "raw YUV input needs --width (-w), --pixel_format (-p)"),
    (dict(width=4, pix_fmt="420"), "raw YUV input needs --height (-h) (and --bitdepth (-b))"),
    (dict(width=4, height=2, pix_fmt="420"), "needs a bit depth (--bitdepth, 8..16)"),
])
def test_open_video_raw_needs_geometry(kwargs, fragment, tmp_path):
    path = tmp_path / "clip.yuv"
    path.write_bytes(b"\x10" * 12)
    with pytest.raises(ValueError) as err:
        video.open_video(path, **kwargs)
    assert fragment in str(err.value)


def test_open_video_geometry_must_match_y4m_header(tmp_path):
    path = tmp_path / "clip.y4m"
    video.write_y4m(path, [make_frame(4, 2, "420", 10)])
    with video.open_video(path, width=4, height=2, pix_fmt="420", bitdepth=10):
        pass
    with pytest.raises(ValueError, match="Y4M header says width 4 but 8 was given"):
        video.open_video(path, width=8)
    with pytest.raises(ValueError, match="Y4M header says chroma 420 but 444 was given"):
        video.open_video(path, pix_fmt="444")
    with pytest.raises(ValueError, match="Y4M header says bitdepth 10 but 8 was given"):
        video.open_video(path, pix_fmt="yuv420p")
    with pytest.raises(ValueError, match="unknown pixel format 'rgb24'"):
        video.open_video(path, pix_fmt="rgb24")


def test_open_video_closes_the_file_on_error(tmp_path, monkeypatch):
    opened = []
    real_open = open

    def spy_open(*args, **kwargs):
        f = real_open(*args, **kwargs)
        opened.append(f)
        return f

    monkeypatch.setattr("builtins.open", spy_open)
    bad = tmp_path / "bad.y4m"
    bad.write_bytes(b"YUV4MPEG2 W4 H2 It\n")
    good = tmp_path / "good.y4m"
    video.write_y4m(good, [make_frame(4, 2, "420", 8)])
    raw = tmp_path / "clip.yuv"
    raw.write_bytes(b"\0" * 13)
    opened.clear()
    for call in (lambda: video.open_video(bad),
                 lambda: video.open_video(good, width=8),
                 lambda: video.open_video(good, pix_fmt="rgb24"),
                 lambda: video.open_video(raw),
                 lambda: video.open_video(raw, width=4, height=2, pix_fmt="420", bitdepth=8)):
        with pytest.raises(ValueError):
            call()
    assert len(opened) == 5 and all(f.closed for f in opened)


# ---------------------------------------------------------- numpy planes and the writer

def test_frames_from_arrays_uint8_and_uint16():
    planes8 = np.arange(2 * 3 * 5, dtype=np.uint8).reshape(2, 3, 5)
    frames = list(video.frames_from_arrays(planes8))
    assert [f.index for f in frames] == [0, 1]
    assert frames[1].chroma == "400" and frames[1].u is None and frames[1].bitdepth == 8
    np.testing.assert_array_equal(frames[1].y, planes8[1])
    assert np.shares_memory(frames[1].y, planes8)  # no copy of contiguous input

    planes16 = [np.full((3, 5), 1023, np.uint16)] * 2
    frames16 = list(video.frames_from_arrays(planes16, bitdepth=10))
    got = read_all(y4m_bytes(frames16))
    assert (got[0].bitdepth, got[0].chroma) == (10, "400")
    np.testing.assert_array_equal(got[1].y, planes16[1])


@pytest.mark.parametrize("planes,bitdepth,fragment", [
    ([np.zeros((2, 2), np.uint16)], None, "uint16 planes need an explicit bitdepth"),
    ([np.zeros((2, 2), np.uint16)], 8, "bit depth 8 is out of range for uint16 planes"),
    ([np.zeros((2, 2), np.uint8)], 10, "plane 0: uint8 samples are 8-bit, not 10-bit"),
    ([np.zeros((2, 2), np.float32)], None, "plane 0: dtype float32 is not supported"),
    ([np.zeros((2, 2, 3), np.uint8)], None, "plane 0: expected a 2-D luma array"),
    ([np.zeros((2, 2), np.uint8), np.zeros((2, 3), np.uint8)], None, "plane 1: (2, 3) uint8 differs"),
    ([np.zeros((2, 2), np.uint16), np.full((2, 2), 4096, np.uint16)], 12,
     "frame 1: Y plane has sample value 4096, above the 12-bit maximum 4095"),
    ([np.zeros((0, 4), np.uint8)], None, "height 0 is out of range"),
])
def test_frames_from_arrays_errors(planes, bitdepth, fragment):
    with pytest.raises(ValueError) as err:
        list(video.frames_from_arrays(planes, bitdepth=bitdepth))
    assert fragment in str(err.value)


@pytest.mark.parametrize("fps,expected", [
    (25, b"F25:1"), (Fraction(30000, 1001), b"F30000:1001"), ("24000/1001", b"F24000:1001"),
    (29.97, b"F2997:100"), (59.94005994005994, b"F60000:1001"),
])
def test_writer_frame_rates(fps, expected):
    data = y4m_bytes([make_frame(2, 2, "420", 8)], fps=fps)
    assert expected in data.split(b"\n", 1)[0]


@pytest.mark.parametrize("fps", [0, -1, "0/1"])
def test_writer_rejects_bad_fps(fps):
    with pytest.raises(ValueError, match="fps must be positive"):
        video.write_y4m(io.BytesIO(), [make_frame(2, 2, "420", 8)], fps=fps)


def test_writer_to_stdout(monkeypatch):
    out = io.BytesIO()

    class FakeStdout:
        buffer = out

    monkeypatch.setattr(sys, "stdout", FakeStdout)
    frame = make_frame(3, 3, "444", 8)
    assert video.write_y4m("-", [frame]) == 1
    assert not out.closed
    assert_frames_equal(read_all(out.getvalue())[0], frame)


def test_writer_rejects_mismatched_frames():
    frames = [make_frame(4, 2, "420", 8), make_frame(4, 4, "420", 8)]
    with pytest.raises(ValueError, match=r"frame 1 \(4x4, 420, 8-bit\) differs from the stream "
                                         r"\(4x2, 420, 8-bit\)"):
        video.write_y4m(io.BytesIO(), frames)


def test_writer_rejects_wrong_plane_shapes_and_samples():
    frame = make_frame(4, 2, "420", 10)
    bad_shape = video.Frame(frame.y, frame.u[:, :1], frame.v, 10, 0, "420")
    with pytest.raises(ValueError, match=r"frame 0: planes .* do not fit a 4x2, 420, 10-bit frame"):
        video.write_y4m(io.BytesIO(), [bad_shape])
    bad_dtype = video.Frame(frame.y.astype(np.uint8), frame.u, frame.v, 10, 0, "420")
    with pytest.raises(ValueError, match="do not fit"):
        video.write_y4m(io.BytesIO(), [bad_dtype])
    too_big = video.Frame(frame.y, frame.u, frame.v + 1024, 10, 0, "420")
    with pytest.raises(ValueError, match=r"write_y4m: frame 0: V plane has sample value"):
        video.write_y4m(io.BytesIO(), [too_big])


def test_writer_with_no_frames_writes_nothing():
    out = io.BytesIO()
    assert video.write_y4m(out, []) == 0
    assert out.getvalue() == b""


def test_frame_repr_is_short():
    frame = make_frame(1920, 1080, "420", 10)
    assert repr(frame) == "Frame(index=0, 1920x1080, chroma=420, bitdepth=10)"


@pytest.mark.parametrize("header,fragment", [
    (b"YUV4MPEG2 W8 H8 F25:1 C420jpeg\r\n", "'\\r' (a CR LF line end"),
    (b"YUV4MPEG2 W8 H8\tF25:1\n", "'\\t'"),
])
def test_a_header_with_a_control_character_says_so_on_one_line(header, fragment):
    # Before: a CR LF header reached the colour-space check, whose message
    # ("unknown Y4M colour space C420jpeg\r; supported: ...") broke in two.
    with pytest.raises(video.VideoFormatError) as e:
        video.Y4MReader(io.BytesIO(header + b"FRAME\n" + bytes(96)))
    text = str(e.value)
    assert "control character" in text and fragment in text
    assert "\r" not in text and "\n" not in text
