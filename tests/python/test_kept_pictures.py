"""Context.read_pictures(keep=True) (C: vmaf_dnn_read_pictures_kept): the
arrays are kept instead of copied for frames in flight and past pictures,
score as copied ones, are held alive until the library's last read and then
released once, on the caller's thread; a call that raises keeps nothing."""
import gc
import os
import signal
import subprocess
import sys
import threading
import time
import weakref

import numpy as np
import pytest

import vmafdnn
from vmafdnn import context as context_module
from vmafdnn.errors import AlreadyExistsError, InvalidArgumentError

FRAMES = 9
MODELS = ("vmaf", "psnr_y", "ssim_y")


def clip(bitdepth, frames=FRAMES, h=64, w=96):
    """(reference, distorted) arrays per frame: moving noise, so that motion
    (which reads the previous reference) is not zero."""
    rng = np.random.default_rng(bitdepth)
    top = (1 << bitdepth) - 1
    dtype = np.uint8 if bitdepth == 8 else np.uint16
    base = rng.integers(0, top + 1, (h, w + frames))
    out = []
    for i in range(frames):
        ref = base[:, i:i + w].astype(dtype)
        noise = rng.integers(-(top // 20), top // 20 + 1, (h, w))
        out.append((ref, np.clip(ref.astype(np.int64) + noise, 0, top).astype(dtype)))
    return out


def scores(ctx):
    return {name: [ctx.feature(name, i) for i in range(ctx.frame_count)]
            for name in ctx.features}


@pytest.mark.parametrize("bitdepth", [8, 10])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_kept_pictures_score_as_copied(threads, bitdepth):
    frames = clip(bitdepth)
    with vmafdnn.Context(threads=1) as ctx:
        for name in MODELS:
            ctx.use_model(name)
        for i, (ref, dist) in enumerate(frames):
            ctx.read_pictures(ref, dist, i, bitdepth=bitdepth)
        ctx.flush()
        want = scores(ctx)
    released = []
    caller = threading.get_ident()
    with vmafdnn.Context(threads=threads) as ctx:
        for name in MODELS:
            ctx.use_model(name)
        for i, (ref, dist) in enumerate(frames):
            ctx.read_pictures(ref.copy(), dist.copy(), i, bitdepth=bitdepth, keep=True,
                              released=lambda i=i: released.append((i, threading.get_ident())))
            if threads == 1:  # nothing in flight: released before the call returns
                assert released[-1][0] == i
            else:  # this frame is in flight
                assert i not in [k for k, _ in released]
        ctx.flush()
        assert sorted(released) == [(i, caller) for i in range(FRAMES)]
        assert scores(ctx) == want
    assert not context_module._kept


def test_kept_arrays_live_until_released():
    (ref, dist), = clip(8, frames=1)
    with vmafdnn.Context(threads=2) as ctx:
        ctx.use_model("vmaf")
        ref, dist = ref.copy(), dist.copy()
        alive = [weakref.ref(ref), weakref.ref(dist)]
        ctx.read_pictures(ref, dist, 0, keep=True)
        del ref, dist
        gc.collect()
        assert all(r() is not None for r in alive)  # in flight: the context holds them
        ctx.flush()
        gc.collect()
        assert all(r() is None for r in alive)
        assert ctx.feature("vmaf", 0) == ctx.feature("vmaf", 0)  # scored, not NaN


def test_a_call_that_raises_keeps_nothing():
    (ref, dist), = clip(8, frames=1)
    released = []
    with vmafdnn.Context(threads=2) as ctx:
        ctx.use_model("psnr_y")
        with pytest.raises(InvalidArgumentError, match="released= needs keep=True"):
            ctx.read_pictures(ref, dist, 0, released=lambda: released.append(0))
        with pytest.raises(InvalidArgumentError, match="uint8"):
            ctx.read_pictures(ref.astype(np.int32), dist, 0, keep=True,
                              released=lambda: released.append(1))
        with pytest.raises(InvalidArgumentError):
            ctx.read_pictures(ref, dist[:32], 0, keep=True,  # sizes differ
                              released=lambda: released.append(2))
        ctx.read_pictures(ref, dist, 0, keep=True, released=lambda: released.append(3))
        with pytest.raises(AlreadyExistsError):  # in flight
            ctx.read_pictures(ref, dist, 0, keep=True, released=lambda: released.append(4))
        assert released == []
        ctx.flush()
    assert released == [3]
    assert not context_module._kept


@pytest.mark.parametrize("how", ["close", "reset", "cancel"])
def test_close_reset_and_cancel_release_every_kept_picture(how):
    frames = clip(8, frames=6)
    released = []
    ctx = vmafdnn.Context(threads=3)
    ctx.use_model("vmaf")
    ctx.use_model("psnr_y")
    for i, (ref, dist) in enumerate(frames):
        ctx.read_pictures(ref, dist, i, keep=True, released=lambda i=i: released.append(i))
    if how == "reset":
        ctx.reset()
        assert sorted(released) == list(range(6))
    elif how == "cancel":
        ctx.cancel()
        try:
            ctx.flush()
        except vmafdnn.DnnError:
            pass  # the frames it stopped
        assert sorted(released) == list(range(6))
    ctx.close()
    assert sorted(released) == list(range(6))
    assert not context_module._kept


def test_an_exception_in_released_is_reported_and_scoring_goes_on(monkeypatch):
    frames = clip(8, frames=4)
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))

    def fail():
        raise RuntimeError("released failed")

    with vmafdnn.Context(threads=2) as ctx:
        ctx.use_model("psnr_y")
        for i, (ref, dist) in enumerate(frames):
            ctx.read_pictures(ref, dist, i, keep=True, released=fail)
        ctx.flush()
        assert ctx.frame_count == 4
    assert [str(e) for e in seen] == ["released failed"] * 4
    assert not context_module._kept


def test_score_keeps_a_sequences_frames_and_copies_a_generators():
    """vmafdnn.score() hands the library a list's frames to keep, and copies those of a
    generator that refills one array per side (keeping them would score the refilled
    samples): both score as one frame at a time."""
    frames = clip(8, frames=8)
    refs, dists = [r for r, _ in frames], [d for _, d in frames]
    models = ["vmaf", "psnr_y"]

    def refilled(arrays):
        buf = np.empty_like(arrays[0])
        for a in arrays:
            buf[...] = a
            yield buf

    def per_frame(report):
        return [f["metrics"] for f in report["frames"]]

    want = per_frame(vmafdnn.score(refs, dists, models=models, threads=1))
    assert per_frame(vmafdnn.score(refs, dists, models=models, threads=3)) == want
    assert per_frame(vmafdnn.score(refilled(refs), refilled(dists), models=models,
                                   threads=3)) == want
    assert not context_module._kept


def test_a_released_that_refers_to_its_context_does_not_keep_it_alive():
    """released= callables are the Context's own: one that refers to the Context (a method
    of an object that owns it) lets the garbage collector free it, and its pictures go."""
    frames = clip(8, frames=5)
    ctx = vmafdnn.Context(threads=3)
    ctx.use_model("vmaf")
    alive = weakref.ref(ctx)
    for i, (ref, dist) in enumerate(frames):
        ctx.read_pictures(ref.copy(), dist.copy(), i, keep=True,
                          released=lambda c=ctx: c.fps)
    del ctx
    gc.collect()
    assert alive() is None
    assert not context_module._kept


def test_released_may_call_its_own_context():
    """released= runs after the call that released its pictures is out of the library (it
    used to run inside it, where a call back into the context had to be refused with
    BusyError): it may ask the context, or close it."""
    frames = clip(8, frames=6)
    done = []
    with vmafdnn.Context(threads=2) as ctx:
        ctx.use_model("psnr_y")
        for i, (ref, dist) in enumerate(frames):
            ctx.read_pictures(ref, dist, i, keep=True,
                              released=lambda: done.append(ctx.frames_done()))
        ctx.flush()
        assert ctx.frame_count == 6
    # (not in order: a released= that calls the context lets that call collect and call the
    # next ones before its own answer is appended)
    assert len(done) == 6 and all(0 <= n <= 6 for n in done)
    ctx = vmafdnn.Context(threads=2)
    ctx.use_model("psnr_y")
    ctx.read_pictures(*frames[0], 0, keep=True, released=ctx.close)
    ctx.read_pictures(*frames[1], 1, keep=True, released=ctx.close)
    with pytest.raises(vmafdnn.ClosedError):
        for i, (ref, dist) in enumerate(frames[2:], 2):  # the first release closes it
            ctx.read_pictures(ref, dist, i, keep=True)
    assert not context_module._kept


def test_ctrl_c_while_scoring_kept_frames_reaches_the_caller_and_leaks_nothing():
    """Ctrl-C raised its KeyboardInterrupt at the first line of the Python callback the
    library's release ran, where cffi printed it and went on: the scoring ran to its end and
    the frame stayed held for the life of the process. The release is C now."""
    frames = clip(8, frames=4, h=360, w=640)
    fed, released = [], []
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    ctx = vmafdnn.Context(threads=2)
    ctx.use_model("ssim_y")
    ctx.use_model("psnr_y")
    t0 = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        i = 0
        while time.monotonic() - t0 < 20:
            ref, dist = frames[i % 4]
            ctx.read_pictures(ref, dist, i, keep=True, released=lambda i=i: released.append(i))
            fed.append(i)
            i += 1
    assert time.monotonic() - t0 < 10  # the interruption, not the end of the loop
    timer.join()
    ctx.close()
    assert not context_module._kept
    # every frame fed released once (the interrupted call's frame too, when the library
    # had kept it before the interruption reached Python)
    assert sorted(released)[:len(fed)] == fed and len(set(released)) == len(released)


def test_a_keyboard_interrupt_in_released_goes_on_up_after_the_others():
    """A released= that raises KeyboardInterrupt (Ctrl-C landing in it) interrupts the call
    that ran it, after the other released pictures were let go and their callables called:
    it used to leave them held for the life of the process (a review's find)."""
    frames = clip(8, frames=3)
    calls = []

    def released(i):
        calls.append(i)
        if len(calls) == 1:
            raise KeyboardInterrupt

    ctx = vmafdnn.Context(threads=3)
    ctx.use_model("psnr_y")
    for i, (ref, dist) in enumerate(frames):
        ctx.read_pictures(ref, dist, i, keep=True, released=lambda i=i: released(i))
    with pytest.raises(KeyboardInterrupt):
        ctx.close()
    assert sorted(calls) == [0, 1, 2]
    assert not context_module._kept


def test_garbage_collection_lets_go_what_an_interrupted_collection_left():
    """Pictures the library released that no call collected (the collection was cut short)
    are let go when the Context is collected, their released= dropped."""
    frames = clip(8, frames=3)
    ctx = vmafdnn.Context(threads=3)
    ctx.use_model("psnr_y")
    for i, (ref, dist) in enumerate(frames):
        ctx.read_pictures(ref, dist, i, keep=True)
    original = ctx._collect_released
    ctx._collect_released = lambda: None  # as a collection interrupted at its start
    ctx.close()
    assert len(context_module._kept) == 3
    del original
    del ctx
    gc.collect()
    assert not context_module._kept


_DAEMON_AT_EXIT = """
import threading, time
import numpy as np, vmafdnn
frames = [np.random.default_rng(k).integers(0, 256, (1080, 1920), dtype=np.uint8)
          for k in range(3)]
started = threading.Event()

def work():
    with vmafdnn.Context(threads=2) as ctx:
        ctx.use_model("vmaf")
        ctx.use_model("ssim_y")
        for i in range(10 ** 6):
            ctx.read_pictures(frames[i % 3], frames[(i + 1) % 3], i, keep=True)
            started.set()

threading.Thread(target=work, daemon=True).start()
started.wait()
time.sleep(0.3)
"""


def test_interpreter_exit_with_a_daemon_thread_scoring_kept_frames():
    """The main thread ends while a daemon thread scores kept frames: a release made by the
    daemon's call after the interpreter was finalised ran the Python callback there
    (SIGSEGV in PyGILState_Ensure: 4 exits of 12 of this script, 1080p frames)."""
    for _ in range(10):
        proc = subprocess.run([sys.executable, "-c", _DAEMON_AT_EXIT], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])


@pytest.mark.parametrize("config", [dict(threads=3, batch=2, static_shapes="on", device_io="on"),
                                    dict(threads=4, batch=3)],
                         ids=["static-device_io-batch2", "batch3"])
def test_kept_pictures_in_batches_and_specialised_sessions(config):
    """Kept frames scored in batches (several frames per Run) and through specialised sessions
    with bound I/O (UINT8 at 8 bits) score as copied ones, each released once."""
    for bitdepth in (8, 10):
        frames = clip(bitdepth)
        got = {}
        for keep in (False, True):
            released = []
            with vmafdnn.Context(**config) as ctx:
                for name in MODELS + ("float_ssim",):
                    ctx.use_model(name)
                for i, (ref, dist) in enumerate(frames):
                    ctx.read_pictures(ref.copy(), dist.copy(), i, bitdepth=bitdepth, keep=keep,
                                      released=(lambda i=i: released.append(i)) if keep
                                      else None)
                ctx.flush()
                got[keep] = scores(ctx)
            assert sorted(released) == (list(range(FRAMES)) if keep else [])
        assert got[True] == got[False]
    assert not context_module._kept
