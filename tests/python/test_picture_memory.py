"""Context.picture_buffer (C: vmaf_dnn_picture_buffer_alloc / _free,
vmaf_dnn_picture_memory): arrays in the memory a context's models send pictures to
their device from. Pictures read into them score as numpy's own arrays do and, where
that memory is a device's host-accessible (pinned) memory, go to the device from where
they lie (StaticRuns.pictures). No GPU here: VMAFDNN_TEST_HOST_ACCESSIBLE=1, read as a
session opens, stands ORT's CPU allocator in for a device's pinned memory."""
import errno
import gc
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import vmafdnn
from vmafdnn.errors import ClosedError, InvalidArgumentError, OutOfMemoryError

from forking import child_code
from test_kept_pictures import clip, scores

# psnr_y, ssim_y and VMAF's features take their pictures' own samples on ORT's CPU EP
# (the kernels forms); motion2 and the SVM read features only.
MODELS = ("psnr_y", "ssim_y", "vmaf")
SAMPLES_MODELS = ("psnr_y.onnx", "ssim_y.onnx", "vmaf_features.onnx")


def open_context(threads, hook, monkeypatch, models=MODELS, **kwargs):
    if hook:
        monkeypatch.setenv("VMAFDNN_TEST_HOST_ACCESSIBLE", "1")
    else:
        monkeypatch.delenv("VMAFDNN_TEST_HOST_ACCESSIBLE", raising=False)
    ctx = vmafdnn.Context(device="cpu", threads=threads, static_shapes="on", device_io="on",
                          **kwargs)
    for name in models:
        ctx.use_model(name)
    return ctx


def in_buffer(ctx, plane):
    """plane's samples in a picture buffer of ctx, rows back to back."""
    out = ctx.picture_buffer(plane.nbytes).view(plane.dtype).reshape(plane.shape)
    out[...] = plane
    return out


def score(ctx, frames, bitdepth, place, keep):
    for i, (ref, dist) in enumerate(frames):
        ctx.read_pictures(place(ref), place(dist), i, bitdepth=bitdepth, keep=keep)
    ctx.flush()
    return scores(ctx)


def pictures_runs(ctx):
    return {os.path.basename(m.path): ctx.static_runs(i).pictures
            for i, m in enumerate(ctx.models)}


@pytest.mark.parametrize("bitdepth", [8, 10, 16])
@pytest.mark.parametrize("threads,keep", [(1, False), (1, True), (3, False), (3, True)])
def test_pictures_in_buffers_score_as_arrays_and_go_from_where_they_lie(
        monkeypatch, bitdepth, threads, keep):
    frames = clip(bitdepth)
    with open_context(1, False, monkeypatch) as ctx:
        want = score(ctx, frames, bitdepth, np.copy, False)
    with open_context(threads, True, monkeypatch) as ctx:
        assert ctx.picture_memory  # ORT's CPU allocator's name under the hook
        got = score(ctx, frames, bitdepth, lambda p: in_buffer(ctx, p), keep)
        runs = pictures_runs(ctx)
    assert got == want
    # frames in flight read without keep: from the library's copy in a slot, which lies in
    # that memory too
    assert runs == {name: len(frames) if name in SAMPLES_MODELS else 0 for name in runs}


def test_pictures_elsewhere_or_spaced_are_copied_as_before(monkeypatch):
    frames = clip(10)
    with open_context(1, False, monkeypatch) as ctx:
        want = score(ctx, frames, 10, np.copy, False)

    def spaced(plane):  # a crop of a buffer: its rows lie apart
        h, w = plane.shape
        wide = ctx.picture_buffer(h * (w + 8) * 2).view(np.uint16).reshape(h, w + 8)
        wide[:, :w] = plane
        return wide[:, :w]

    for place in (np.copy, spaced):
        for threads, keep in ((1, False), (1, True), (3, True)):
            with open_context(threads, True, monkeypatch) as ctx:
                assert score(ctx, frames, 10, place, keep) == want
                assert set(pictures_runs(ctx).values()) == {0}
        with open_context(3, True, monkeypatch) as ctx:  # in flight, copied into slots
            assert score(ctx, frames, 10, place, False) == want
            assert max(pictures_runs(ctx).values()) == len(frames)


def test_without_host_accessible_memory_buffers_are_plain(monkeypatch):
    frames = clip(8)
    with open_context(2, False, monkeypatch) as ctx:
        want = score(ctx, frames, 8, np.copy, True)
    with open_context(2, False, monkeypatch) as ctx:
        assert ctx.picture_memory is None
        buf = ctx.picture_buffer(1000)
        assert buf.dtype == np.uint8 and buf.shape == (1000,) and buf.flags.writeable
        assert buf.ctypes.data % 64 == 0
        assert score(ctx, frames, 8, lambda p: in_buffer(ctx, p), True) == want
        assert set(pictures_runs(ctx).values()) == {0}


def test_no_picture_model_no_pinned_memory(monkeypatch):
    """The memory is chosen by the models that take samples, as they attach."""
    monkeypatch.setenv("VMAFDNN_TEST_HOST_ACCESSIBLE", "1")
    with vmafdnn.Context(device="cpu") as ctx:
        assert ctx.picture_memory is None
        ctx.use_model("psnr_y")
        assert ctx.picture_memory


def test_a_buffer_goes_back_when_its_array_and_views_are_gone(monkeypatch):
    with open_context(0, False, monkeypatch, models=()) as ctx:
        buf = ctx.picture_buffer(4096)
        at = buf.ctypes.data
        view = buf[100:200].view(np.uint16)
        del buf
        gc.collect()
        assert ctx.picture_buffer(4096).ctypes.data != at  # the view holds it
        del view
        gc.collect()
        # given back: the context keeps it for its next buffer of that size
        assert ctx.picture_buffer(4096).ctypes.data == at


def test_buffers_outlive_their_context(monkeypatch):
    ctx = open_context(0, True, monkeypatch, models=("psnr_y",))
    bufs = [ctx.picture_buffer(1 << 16) for _ in range(20)]
    ctx.close()
    for i, buf in enumerate(bufs):
        buf[:] = i
    assert [int(b[-1]) for b in bufs] == list(range(20))
    del bufs
    gc.collect()
    with pytest.raises(ClosedError):
        ctx.picture_buffer(10)
    with pytest.raises(ClosedError):
        ctx.picture_memory


def test_sizes(monkeypatch):
    with open_context(0, False, monkeypatch, models=()) as ctx:
        for bad in (0, -1):
            with pytest.raises(InvalidArgumentError) as e:
                ctx.picture_buffer(bad)
            assert e.value.errno == errno.EINVAL
        for huge in (2**62, 2**64, 10**30):
            with pytest.raises(OutOfMemoryError) as e:
                ctx.picture_buffer(huge)
            assert e.value.errno == errno.ENOMEM
        for not_int in ("12", 1.5, None, True):
            with pytest.raises(TypeError):
                ctx.picture_buffer(not_int)
        assert ctx.picture_buffer(np.int64(7)).shape == (7,)


def test_threads_take_buffers_while_another_scores(monkeypatch):
    frames = clip(10)
    with open_context(1, False, monkeypatch) as ctx:
        want = score(ctx, frames, 10, np.copy, False)
    with open_context(2, True, monkeypatch) as ctx:
        errors, stop = [], threading.Event()

        def churn(seed):
            try:
                held = []
                while not stop.is_set():
                    buf = ctx.picture_buffer(512 + 64 * (seed % 3))
                    buf[:] = seed
                    held.append(buf)
                    if len(held) > 8:
                        old = held.pop(0)
                        assert (old == seed).all()  # nobody else was given it
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=churn, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        try:
            got = score(ctx, frames, 10, lambda p: in_buffer(ctx, p), True)
        finally:
            stop.set()
            for t in threads:
                t.join()
    assert not errors
    assert got == want


def test_a_forked_child_leaves_its_parents_buffers_alone(monkeypatch):
    ctx = open_context(0, True, monkeypatch, models=("psnr_y",))
    bufs = [ctx.picture_buffer(4096) for _ in range(4)]

    def child():
        bufs.clear()  # the child's copies collected: not given back there
        gc.collect()
        return 0

    assert child_code(child) == 0
    del bufs
    gc.collect()
    ctx.close()


def y4m_pair(tmp_path):
    """A 4-frame 10-bit mono Y4M pair of clip(10)."""
    frames = clip(10, frames=4)
    paths = {}
    for side, k in (("ref", 0), ("dist", 1)):
        path = tmp_path / f"{side}.y4m"
        h, w = frames[0][k].shape
        with open(path, "wb") as f:
            f.write(f"YUV4MPEG2 W{w} H{h} F25:1 Ip A1:1 Cmono10\n".encode())
            for pair in frames:
                f.write(b"FRAME\n" + pair[k].astype("<u2").tobytes())
        paths[side] = str(path)
    return paths


def mkv_pair(tmp_path):
    """The same pair as lossless FFV1 in Matroska, 4:2:0 (decoded by PyAV, rows padded)."""
    av = pytest.importorskip("av", reason="PyAV is a dependency of vmafdnn: pip install av")
    from test_media import encode
    paths = {}
    for side, k in (("ref", 0), ("dist", 1)):
        frames = []
        for i, pair in enumerate(clip(10, frames=4)):
            y = pair[k]
            c = np.full(((y.shape[0] + 1) // 2, (y.shape[1] + 1) // 2), 512, np.uint16)
            frames.append(vmafdnn.video.Frame(y, c, c.copy(), 10, i, "420"))
        paths[side] = str(encode(tmp_path / f"{side}.mkv", frames))
    del av
    return paths


def test_decoded_frames_are_packed_into_the_buffers_the_reader_is_given(tmp_path):
    from vmafdnn import media
    paths = mkv_pair(tmp_path)
    with media.MediaReader(paths["ref"], prefetch=0) as plain:
        want = [f.planes() for f in plain]
    given = []

    def allocate(size):
        given.append(np.empty(size, np.uint8))
        return given[-1]

    with media.MediaReader(paths["ref"], prefetch=0) as reader:
        reader.allocate = allocate
        got = list(reader)
    assert len(got) == len(want) == len(given) == 4
    for frame, planes, buf in zip(got, want, given):
        assert [p.tobytes() for p in frame.planes()] == [p.tobytes() for p in planes]
        assert frame.y.base is not None and np.shares_memory(frame.y, buf)
        assert frame.y.flags.c_contiguous  # rows back to back, as a model feeds them


@pytest.mark.parametrize("pair", [y4m_pair, mkv_pair])
def test_the_command_line_reads_frames_into_pinned_buffers(tmp_path, pair):
    """With pinned memory (the hook) the CLI's readers read each frame into a picture
    buffer (a decoded frame: its planes packed into one) and say so; the scores are those
    read into numpy's arrays."""
    paths = pair(tmp_path)
    outputs = {}
    for hook in ("0", "1"):
        env = dict(os.environ, VMAFDNN_TEST_HOST_ACCESSIBLE=hook)
        report = tmp_path / f"report{hook}.json"
        run = subprocess.run(
            [sys.executable, "-m", "vmafdnn", "-r", paths["ref"], "-d", paths["dist"],
             "--model", "psnr_y", "--model", "vmaf", "--tiny-device", "cpu",
             "--tiny-threads", "2", "--tiny-static-shapes", "on", "--tiny-device-io", "on",
             "-o", str(report)], env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        outputs[hook] = run.stdout
        report_text = report.read_text()
        outputs[hook + "report"] = report_text[report_text.index('"frames"'):]
    said = "pictures sent from where they were read on 4 of 4 runs"
    assert said not in outputs["0"]
    assert outputs["1"].count(said) == 2, outputs["1"]  # psnr_y and VMAF's features
    assert outputs["1report"].replace(" ", "") == outputs["0report"].replace(" ", "")
