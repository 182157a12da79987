"""Containers and codecs through PyAV (vmafdnn.media): recognised by content,
decoded at the source's depth and chroma without copies, aligned on request,
and mismatches described on both sides."""
import gc
import io
import json
import os
import threading

import numpy as np
import pytest

av = pytest.importorskip("av", reason="PyAV is a dependency of vmafdnn: pip install av")

import vmafdnn  # noqa: E402
from vmafdnn import media, video  # noqa: E402
from vmafdnn.cli import main  # noqa: E402
from vmafdnn.frames import format_label  # noqa: E402
from vmafdnn.scoring import InputMismatchError  # noqa: E402
from vmafdnn.video import Frame, VideoFormatError  # noqa: E402

from clips import clips8_fixture, clips10_fixture  # noqa: E402,F401
from test_video import assert_same_planes  # noqa: E402

needs_ort = pytest.mark.skipif(not vmafdnn.available(), reason="ONNX Runtime is not installed")


def make_frames(width, height, chroma, bitdepth, count, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.uint8 if bitdepth == 8 else np.uint16
    frames = []
    for i in range(count):
        y = rng.integers(0, 1 << bitdepth, (height, width), dtype=dtype)
        if chroma == "400":
            u = v = None
        else:
            cshape = video._chroma_shape(chroma, width, height)
            u = rng.integers(0, 1 << bitdepth, cshape, dtype=dtype)
            v = rng.integers(0, 1 << bitdepth, cshape, dtype=dtype)
        frames.append(Frame(y, u, v, bitdepth, i, chroma))
    return frames


def encode(path, frames, codec="ffv1", rate=25, fmt=None, options=None):
    """Encodes Frames with PyAV (ffv1: lossless) and returns the path."""
    first = frames[0]
    with av.open(str(path), "w", format=fmt) as out:
        stream = out.add_stream(codec, rate=rate, options=options or {})
        stream.width, stream.height = first.width, first.height
        stream.pix_fmt = format_label(first.chroma, first.bitdepth)
        for frame in frames:
            for packet in stream.encode(media._to_av_frame(av, frame)):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


# -- decoding at the source's layout ------------------------------------------------

@pytest.mark.parametrize("chroma,bitdepth", [("420", 8), ("422", 10), ("444", 12),
                                             ("400", 16), ("420", 9)])
def test_lossless_container_decodes_bit_exact_at_its_depth_and_chroma(tmp_path, chroma,
                                                                      bitdepth):
    frames = make_frames(34, 18, chroma, bitdepth, 3)
    path = encode(tmp_path / "clip.mkv", frames)
    with video.open_video(path) as reader:
        assert isinstance(reader, media.MediaReader)
        assert (reader.width, reader.height, reader.chroma, reader.bitdepth) == \
            (34, 18, chroma, bitdepth)
        got = list(reader)
    assert len(got) == 3
    for g, w in zip(got, frames):
        assert_same_planes(g, w)
    assert [g.index for g in got] == [0, 1, 2]


def _plane_owner(array):
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    return base.obj if isinstance(base, memoryview) else base


def test_planes_are_views_of_the_decoders_buffers(tmp_path):
    # 8-bit 4:2:2 at width 34: FFmpeg pads rows, so the view is strided.
    path = encode(tmp_path / "clip.mkv", make_frames(34, 18, "422", 8, 2))
    with video.open_video(path, prefetch=0) as reader:
        frame = reader.read_frame()
    for plane in frame.planes():
        assert not plane.flags.owndata
        assert isinstance(_plane_owner(plane), av.video.plane.VideoPlane)
    assert frame.y.strides[0] > frame.y.shape[1]  # padded rows: no copy into a packed array
    gc.collect()  # the views keep the decoded frame alive
    assert frame.y.shape == (18, 34) and int(frame.y.max()) > 0


def test_other_layouts_convert_without_touching_luma(tmp_path):
    # 4:1:1 has no Frame layout: it becomes 4:4:4, luma sample for sample.
    rng = np.random.default_rng(3)
    luma = rng.integers(16, 236, (16, 32), dtype=np.uint8)
    path = tmp_path / "clip411.mkv"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("ffv1", rate=25)
        stream.width, stream.height, stream.pix_fmt = 32, 16, "yuv411p"
        vf = av.VideoFrame(32, 16, "yuv411p")
        for k, plane in enumerate(vf.planes):
            view = np.frombuffer(plane, np.uint8).reshape(plane.height, plane.line_size)
            view[:, :plane.width] = luma if k == 0 else 128
        for packet in list(stream.encode(vf)) + list(stream.encode()):
            out.mux(packet)
    with video.open_video(path) as reader:
        assert reader.pix_fmt == "yuv411p" and reader.chroma == "444"
        frame = reader.read_frame()
    np.testing.assert_array_equal(frame.y, luma)
    assert frame.u.shape == (16, 32)


def test_conversion_targets_keep_depth_and_chroma_resolution():
    def target(name):
        return media._conversion_target(av.VideoFrame(32, 16, name).format)
    assert target("nv12") == "yuv420p"
    assert target("p010le") == "yuv420p10le"
    assert target("nv16") == "yuv422p"
    assert target("rgb24") == "yuv444p"
    assert target("gbrp12le") == "yuv444p12le"
    assert target("yuv420p10be") == "yuv420p10le"
    assert target("gray10be") == "gray10le"
    assert target("yuv440p") == "yuv444p"


# -- recognised by content ------------------------------------------------------------

def test_container_is_recognised_by_content_not_extension(tmp_path):
    frames = make_frames(16, 8, "420", 8, 2)
    mislabelled = encode(tmp_path / "clip.y4m", frames, fmt="matroska")
    with video.open_video(mislabelled) as reader:
        assert isinstance(reader, media.MediaReader) and len(list(reader)) == 2
    y4m_named_mp4 = tmp_path / "clip.mp4"
    video.write_y4m(y4m_named_mp4, frames)
    with video.open_video(y4m_named_mp4) as reader:
        assert isinstance(reader, video.Y4MReader)


def test_container_from_a_file_object(tmp_path):
    frames = make_frames(16, 8, "444", 10, 3)
    data = encode(tmp_path / "clip.mkv", frames).read_bytes()
    with video.open_video(io.BufferedReader(io.BytesIO(data))) as reader:
        assert isinstance(reader, media.MediaReader)
        for g, w in zip(reader, frames):
            assert_same_planes(g, w)


def test_a_container_through_a_named_pipe_keeps_its_first_bytes(tmp_path):
    # `vmafdnn -d <(cat x.mkv)`: before, the pipe was peeked through Python
    # and then opened again by name by FFmpeg, which lost the bytes the
    # peek had read ("Invalid data found when processing input").
    frames = make_frames(16, 8, "420", 8, 3)
    data = encode(tmp_path / "clip.mkv", frames).read_bytes()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:
            f.write(data)
    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    done = {}

    def read():  # in a thread: the old code blocked for ever in FFmpeg's open
        try:
            with video.open_video(str(fifo)) as reader:
                done["reader"] = (type(reader), reader.name)
                done["frames"] = list(reader)
        except Exception as e:
            done["error"] = e
    reading = threading.Thread(target=read, daemon=True)
    reading.start()
    reading.join(60)
    assert not reading.is_alive(), "blocked"
    assert "error" not in done, done.get("error")
    assert done["reader"] == (media.MediaReader, str(fifo))
    got = done["frames"]
    assert len(got) == 3
    for g, w in zip(got, frames):
        assert_same_planes(g, w)


def test_ffmpeg_reads_the_file_that_was_opened_not_what_its_name_names_later(tmp_path,
                                                                             monkeypatch):
    # The path is opened and peeked once; FFmpeg then reads that descriptor
    # (/proc/self/fd/N), not the name again: a file swapped in between (for
    # a FIFO that hangs, or another clip) is not what gets decoded.
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd")
    first = make_frames(16, 8, "420", 8, 2, seed=1)
    other = make_frames(16, 8, "420", 8, 5, seed=2)
    clip = encode(tmp_path / "clip.mkv", first)
    encode(tmp_path / "other.mkv", other)
    real_init = media.MediaReader.__init__

    def swap_then_open(self, source, **kwargs):
        os.replace(tmp_path / "other.mkv", clip)  # the name now means another file
        real_init(self, source, **kwargs)
    monkeypatch.setattr(media.MediaReader, "__init__", swap_then_open)
    with video.open_video(str(clip)) as reader:
        assert reader.name == str(clip)
        got = list(reader)
    assert len(got) == 2
    for g, w in zip(got, first):
        assert_same_planes(g, w)


def test_container_wins_over_raw_geometry(tmp_path):
    # -w/-h/-p given for a raw reference must not turn the mp4 beside it into raw YUV.
    path = encode(tmp_path / "clip.mkv", make_frames(16, 8, "420", 8, 1))
    with video.open_video(path, width=16, height=8, pix_fmt="420", bitdepth=8) as reader:
        assert isinstance(reader, media.MediaReader)
    with pytest.raises(ValueError, match=r"clip\.mkv: ffv1 in matroska,webm header says "
                                         r"width 16 but 32 was given"):
        video.open_video(path, width=32, height=8, pix_fmt="420")


def test_undecodable_input_says_so_without_raw_flags(tmp_path):
    noise = np.random.default_rng(1).integers(0, 256, 5000, dtype=np.uint8).tobytes()
    # .bin: FFmpeg's BinText demuxer claims it by extension alone.
    for junk in (tmp_path / "junk.dat", tmp_path / "junk.bin"):
        junk.write_bytes(noise)
        with pytest.raises(VideoFormatError) as err:
            video.open_video(junk)
        text = str(err.value)
        assert text.startswith(f"{junk}: not a Y4M stream, and FFmpeg's libraries cannot "
                               "decode it")
        assert "--width" not in text
    raw = tmp_path / "clip.yuv"
    raw.write_bytes(noise)
    with pytest.raises(ValueError, match=r"clip\.yuv: raw YUV input needs --width \(-w\)"):
        video.open_video(raw)


def test_audio_only_container_has_no_video_stream(tmp_path):
    path = tmp_path / "tone.mka"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("pcm_s16le", rate=8000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 800), np.int16), format="s16",
                                           layout="mono")
        frame.sample_rate = 8000
        for packet in list(stream.encode(frame)) + list(stream.encode()):
            out.mux(packet)
    with pytest.raises(VideoFormatError, match=r"tone\.mka: the matroska,webm container "
                                               r"has no video stream"):
        video.open_video(path)


def test_truncated_container_is_a_format_error(tmp_path, clips8):
    data = clips8.encoded.read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[:len(data) // 2])
    with pytest.raises(VideoFormatError, match=r"cut\.mp4"):
        with video.open_video(cut) as reader:
            list(reader)


# -- decode-ahead thread ----------------------------------------------------------------

def test_prefetch_gives_the_same_frames_and_stops_on_close(tmp_path):
    frames = make_frames(24, 16, "420", 10, 12)
    path = encode(tmp_path / "clip.mkv", frames)
    before = threading.active_count()
    with video.open_video(path, prefetch=0) as plain:
        direct = list(plain)
    with video.open_video(path, prefetch=2) as ahead:
        assert threading.active_count() == before + 1
        first = ahead.read_frame()
    assert threading.active_count() == before  # close() joined the decode thread
    with video.open_video(path, prefetch=4) as ahead:
        prefetched = [first] + list(ahead)[1:]
    assert len(direct) == len(prefetched) == 12
    for a, b in zip(direct, prefetched):
        assert_same_planes(a, b)


def test_prefetch_hands_decode_errors_to_the_reader(tmp_path, monkeypatch):
    path = encode(tmp_path / "clip.mkv", make_frames(16, 8, "420", 8, 6))
    real = media.MediaReader._convert

    def failing(self, vf, index):
        if index == 3:
            raise VideoFormatError(f"{self.name}: frame 3: injected")
        return real(self, vf, index)

    monkeypatch.setattr(media.MediaReader, "_convert", failing)
    with video.open_video(path, prefetch=3) as reader:
        got = [reader.read_frame() for _ in range(3)]
        with pytest.raises(VideoFormatError, match="frame 3: injected"):
            reader.read_frame()
    assert [f.index for f in got] == [0, 1, 2]


# -- scoring real encodes -------------------------------------------------------------

@needs_ort
@pytest.mark.parametrize("pair", ["clips8", "clips10"])
def test_scoring_an_mp4_equals_scoring_ffmpegs_decode_of_it(pair, request):
    clips = request.getfixturevalue(pair)
    from_mp4 = vmafdnn.score(clips.ref, clips.encoded)
    from_y4m = vmafdnn.score(clips.ref, clips.dist)
    assert from_mp4["frames"] == from_y4m["frames"]
    assert from_mp4["fps"] > 0  # processing speed, as in libvmaf


@needs_ort
def test_mp4_and_mkv_pair_from_the_cli(clips8, tmp_path, capsys):
    mkv = encode(tmp_path / "dist.mkv", list(video.open_video(clips8.dist)), codec="libx264",
                 options={"crf": "30", "preset": "veryfast"})
    report = tmp_path / "r.json"
    assert main(["-r", str(clips8.encoded), "-d", str(mkv), "-o", str(report), "-q"]) == 0
    data = json.loads(report.read_text())
    assert len(data["frames"]) == clips8.frames
    assert 20 < data["pooled_metrics"]["psnr_y"]["mean"] < 60


@needs_ort
def test_scale_aligns_a_smaller_encode(clips8, tmp_path):
    small = [media._frame_from_av(media._to_av_frame(av, f).reformat(
        width=176, height=144, interpolation="BICUBIC"), f.index)
        for f in video.open_video(clips8.ref)]
    small_mp4 = encode(tmp_path / "small.mp4", small, codec="libx264", options={"crf": "18"})
    with pytest.raises(InputMismatchError) as err:
        vmafdnn.score(clips8.ref, small_mp4)
    text = str(err.value)
    assert "size mismatch: reference is 352x288 but distorted is 176x144" in text
    assert "reference: 352x288 yuv420p, 25 fps" in text
    assert "distorted: 176x144 yuv420p, 25 fps, 8 frames, h264 in mov,mp4" in text
    assert "--scale" in text
    scaled = vmafdnn.score(clips8.ref, small_mp4, scale=True)
    assert len(scaled["frames"]) == clips8.frames
    # Up-scaled from a quarter of the pixels: close to the reference, not equal.
    assert 22 < scaled["pooled_metrics"]["psnr_y"]["mean"] < 45


def test_scale_frames_keeps_depth_and_layout(clips10):
    frames = list(media.scale_frames(video.open_video(clips10.ref), 160, 120))
    assert len(frames) == clips10.frames
    f = frames[0]
    assert (f.width, f.height, f.chroma, f.bitdepth, f.y.dtype) == \
        (160, 120, "420", 10, np.uint16)
    assert f.u.shape == (60, 80) and int(f.y.max()) < 1024
    same = list(media.scale_frames(video.open_video(clips10.ref), 320, 240))
    assert all(isinstance(x, Frame) and x.width == 320 for x in same)


@needs_ort
def test_offsets_align_a_shifted_clip(clips8, tmp_path):
    frames = list(video.open_video(clips8.ref))
    shifted = tmp_path / "shifted.mkv"
    encode(shifted, frames[2:])  # lossless; starts two frames later
    aligned = vmafdnn.score(clips8.ref, shifted, ref_offset=2)
    psnr = [fr["metrics"]["psnr_y"] for fr in aligned["frames"]]
    # Identical frames: PSNR at libvmaf's cap (6 * 8 + 12 dB) for every one.
    assert psnr == [60.0] * (clips8.frames - 2)
    with pytest.raises(InputMismatchError, match="frame count mismatch") as err:
        vmafdnn.score(clips8.ref, shifted, ref_offset=3)
    assert "--ref-offset" in str(err.value)
    with pytest.raises(InputMismatchError, match=r"distorted: 352x288 yuv420p, 25 fps, .*ffv1 "
                                                 r"in matroska"):
        vmafdnn.score(clips8.ref, shifted, dist_offset=1)


@needs_ort
def test_frame_rate_mismatch_names_both_rates(clips8, tmp_path):
    frames = list(video.open_video(clips8.ref))
    fast = encode(tmp_path / "fast.mkv", frames, rate=50)
    with pytest.raises(InputMismatchError) as err:
        vmafdnn.score(clips8.ref, fast)
    text = str(err.value)
    assert "frame rate mismatch: reference is 25 fps but distorted is 50 fps" in text
    assert "reference: 352x288 yuv420p, 25 fps" in text and "distorted: 352x288" in text
