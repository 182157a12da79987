"""Context.read_pictures(keep=True) (C: vmaf_dnn_read_pictures_kept): the
arrays are kept instead of copied for frames in flight and past pictures,
score as copied ones, are held alive until the library's last read and then
released once, on the caller's thread; a call that raises keeps nothing."""
import errno
import gc
import sys
import threading
import weakref

import numpy as np
import pytest

import vmafdnn
from vmafdnn import context as context_module
from vmafdnn.errors import AlreadyExistsError, BusyError, InvalidArgumentError

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
    assert not context_module._kept and not context_module._released_stores


@pytest.mark.parametrize("call", ["frames_done", "close"])
def test_released_calling_its_own_context_raises_instead_of_waiting(monkeypatch, call):
    """The context is in the call that runs released=: a call back into it would wait for
    itself; it raises BusyError (EDEADLK), reported through sys.unraisablehook, and scoring
    goes on."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    frames = clip(8, frames=4)
    with vmafdnn.Context(threads=2) as ctx:
        ctx.use_model("psnr_y")
        for i, (ref, dist) in enumerate(frames):
            ctx.read_pictures(ref, dist, i, keep=True, released=getattr(ctx, call))
        ctx.flush()
        assert ctx.frame_count == 4
    assert len(seen) == 4
    assert all(isinstance(e, BusyError) and e.errno == errno.EDEADLK for e in seen)
    assert "in a call on this thread already" in str(seen[0])


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
