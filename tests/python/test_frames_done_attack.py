"""Attacks on vmaf_dnn_frames_done (Context.frames_done) and on the
feature_get that no longer waits for every frame in flight.

What a done frame reads must be what one-frame-at-a-time scoring (a threads=0
context) reads after the same frames, bit for bit, whatever the thread timing
and however frames_done and feature calls interleave; a failure of a frame
scored in flight is reported exactly once, by frames_done, a later read or
flush; frames_done never waits and behaves after flush, reset, with no model,
across threads and in a forked child.
"""
import contextlib
import json
import os
import random
import re
import shutil
import struct
import threading

import numpy as np
import pytest

import vmafdnn
from forking import child_code


@pytest.fixture
def stage(models, tmp_path):
    def stage_model(model: str, as_name: str, sidecar=None) -> str:
        path = tmp_path / f"{as_name}.onnx"
        shutil.copyfile(getattr(models, model), path)
        if sidecar is not None:
            (tmp_path / f"{as_name}.json").write_text(json.dumps(sidecar))
        return str(path)

    return stage_model


def bits(v):
    return struct.pack("<d", v)


def get(ctx, key, index):
    """The value's bits, or None for ENOENT."""
    try:
        return bits(ctx.feature(key, index))
    except vmafdnn.ModelNotFoundError:
        return None


def temporal_models(stage):
    """m: the distorted mean minus the one a frame back (workers, past
    pictures); m2 = min(m[t], m[t+1]) runs one behind; m3 = min(m2[t],
    m2[t+1]) runs two behind; nr: a plain picture model."""
    return [
        stage("temporal_diff", "diff", {
            "native_resolution": True, "output_keys": ["m", "bits"],
            "input_sources": {"prev": {"picture": "distorted", "offset": -1},
                              "bpc": {"value": "bpc"}}}),
        stage("pair_min", "min1", {"output_keys": ["m2"], "input_sources": {
            "a": {"feature": "m"}, "b": {"feature": "m", "offset": 1}}}),
        stage("pair_min", "min2", {"output_keys": ["m3"], "input_sources": {
            "a": {"feature": "m2"}, "b": {"feature": "m2", "offset": 1}}}),
        stage("nr_mean", "nr"),
    ]


TEMPORAL_KEYS = ("m", "bits", "m2", "m3", "nr")


def pictures(n, seed, h=8, w=8):
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, 256, (h, w)) // rng.integers(1, 4)).astype(np.uint8)
            for _ in range(n)]


def lockstep(stage, paths, keys, indices, seed, **cfg):
    """Reads `indices` into a context of `cfg` and into a threads=0 one in
    step, calling frames_done and feature at random in between: every value
    the first reads equals the second's after the same frames."""
    rnd = random.Random(seed)
    pics = pictures(len(indices), seed)
    checked = 0
    with vmafdnn.Context(**cfg) as fast, vmafdnn.Context(threads=0) as slow:
        for p in paths:
            fast.use_model(p)
            slow.use_model(p)
        done = 0
        for n, (index, pic) in enumerate(zip(indices, pics), 1):
            fast.read_pictures(None, pic, index)
            slow.read_pictures(None, pic, index)
            for _ in range(rnd.randrange(4)):
                d = fast.frames_done()
                assert d <= n
                done = d
            for _ in range(rnd.randrange(6)):
                # mostly done frames; now and then one in flight (that waits)
                k = rnd.randrange(done) if done and rnd.random() < 0.9 else rnd.randrange(n)
                key = rnd.choice(keys)
                assert get(fast, key, indices[k]) == get(slow, key, indices[k]), \
                    (seed, n, indices[k], key, done)
                checked += 1
        fast.flush()
        slow.flush()
        assert fast.frames_done() == len(indices)
        for index in indices:
            for key in keys:
                assert get(fast, key, index) == get(slow, key, index), (seed, index, key)
    return checked


@pytest.mark.parametrize("cfg", [dict(threads=2), dict(threads=3), dict(threads=2, batch=3)],
                         ids=["t2", "t3", "t2b3"])
def test_done_frames_read_what_one_frame_at_a_time_reads_temporal(stage, cfg):
    paths = temporal_models(stage)
    for seed in range(4):
        lockstep(stage, paths, TEMPORAL_KEYS, list(range(40)), seed, **cfg)


def test_done_frames_read_what_one_frame_at_a_time_reads_out_of_order(stage):
    paths = [stage("nr_mean", "nr"), stage("batch_mean", "bm", {"native_resolution": True})]
    for cfg in (dict(threads=2), dict(threads=0, batch=4), dict(threads=2, batch=2)):
        for seed in range(3):
            indices = random.Random(seed).sample(range(200), 50)
            lockstep(stage, paths, ("nr", "bm"), indices, seed, **cfg)


IN_FLIGHT = r"frame (\d+) \(scored in flight\).*?(?:\(and (\d+) later frames? failed\))?$"


def failures_of(exc):
    """(frame, later failures counted) of a failure scored in flight."""
    m = re.search(IN_FLIGHT, str(exc), re.S)
    assert m, str(exc)
    return int(m.group(1)), int(m.group(2) or 0)


@pytest.mark.parametrize("cfg", [dict(threads=2), dict(threads=3), dict(threads=2, batch=2),
                                 dict(threads=0, batch=3)], ids=["t2", "t3", "t2b2", "t0b3"])
def test_a_failure_in_flight_is_reported_once_and_never_lost(stage, cfg):
    """y reads the caller's feature x of its own frame (a model the workers
    run): a frame without x fails on a worker with ENOENT. Whichever of
    frames_done, read_pictures (which then does not take its frame) and flush
    reports it, every failed frame is counted once, the earliest unreported
    one first, and the frames that did not fail read what one frame at a time
    gives."""
    nr = stage("nr_mean", "nr")
    bm = stage("batch_mean", "bm", {"native_resolution": True})
    feat = stage("pair_min", "y", {"output_keys": ["y"], "input_sources": {
        "a": {"feature": "x"}, "b": {"feature": "x"}}})
    for seed in range(6):
        rnd = random.Random(seed)
        n = 40
        bad = sorted(rnd.sample(range(n), rnd.randrange(1, 8)))
        pics = pictures(n, seed)
        reported = []

        def noted(call):
            """call(); a failure in flight it raises is noted (frame, later ones counted).
            Returns whether it raised one."""
            try:
                call()
            except vmafdnn.ModelNotFoundError as e:
                reported.append(failures_of(e))
                return True
            return False

        with vmafdnn.Context(**cfg) as ctx, vmafdnn.Context(threads=0) as slow:
            for c in (ctx, slow):
                c.use_model(nr)
                c.use_model(bm)
                c.use_model(feat)
            for i in range(n):
                if i not in bad:
                    ctx.feature_append("x", i, i / 7)
                    slow.feature_append("x", i, i / 7)
                    slow.read_pictures(None, pics[i], i)
                else:
                    with pytest.raises(vmafdnn.ModelNotFoundError):
                        slow.read_pictures(None, pics[i], i)
                if noted(lambda: ctx.read_pictures(None, pics[i], i)):
                    # reported once: the retry takes the frame
                    ctx.read_pictures(None, pics[i], i)
                for _ in range(rnd.randrange(3)):
                    noted(ctx.frames_done)
            noted(ctx.flush)
            slow.flush()
            assert ctx.frames_done() == n
            assert ctx.frames_done() == n
            frames = [frame for frame, _ in reported]
            assert sum(1 + more for _, more in reported) == len(bad), (seed, bad, reported)
            assert frames == sorted(set(frames)) and set(frames) <= set(bad)
            assert frames[0] == bad[0]
            for i in range(n):
                for key in ("nr", "bm", "y"):
                    assert get(ctx, key, i) == get(slow, key, i), (seed, i, key)


def const(value, h=8, w=8):
    return np.full((h, w), value, np.uint8)


DARK, BRIGHT = const(51), const(200)  # stall_bright: scores at once / never finishes


def poll(ctx, want):
    """frames_done until it counts `want` (a bound that only a hang meets)."""
    import time
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        d = ctx.frames_done()
        if d >= want:
            return d
    pytest.fail(f"frames_done never reached {want}")


def failure_then_done(ctx, want, match):
    """Polls frames_done until it counts `want`: it must raise `match` (the
    failure of a frame scored in flight) exactly once on the way."""
    raised = 0
    while True:
        try:
            if poll(ctx, want) >= want:
                break
        except vmafdnn.RunCancelledError as e:
            assert re.search(match, str(e)), str(e)
            raised += 1
    assert raised == 1


class Canceller:
    """Cancels ctx from another thread until stopped (a stalled frame ends)."""

    def __init__(self, ctx):
        self.ctx, self.stop = ctx, threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self):
        while not self.stop.is_set():
            self.ctx.cancel()
            self.stop.wait(0.002)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


@contextlib.contextmanager
def stalled(**cfg):
    """A Context that, should the test fail with a frame stalled in flight,
    cancels it while it closes (close waits for the frames in flight)."""
    ctx = vmafdnn.Context(**cfg)
    try:
        yield ctx
    finally:
        ctx.cancel()  # marks every frame in flight: the stalled one ends
        ctx.close()


def test_frames_done_before_models_after_flush_and_across_resets(stage):
    with stalled(threads=2) as ctx:
        assert ctx.frames_done() == 0  # no model, no pool
        ctx.use_model(stage("stall_bright", "stall"))
        assert ctx.frames_done() == 0
        ctx.read_pictures(None, DARK, 0)
        assert poll(ctx, 1) == 1
        ctx.read_pictures(None, BRIGHT, 1)  # never finishes on its own
        for _ in range(20):
            assert ctx.frames_done() == 1  # never waits
        # reset waits for the stalled frame: cancelled from another thread,
        # it ends, and its failure goes with the clip (reset drops it).
        with Canceller(ctx):
            ctx.reset()
        assert ctx.frames_done() == 0
        assert ctx.frame_count == 0
        ctx.read_pictures(None, DARK, 5)  # any index after a reset
        assert poll(ctx, 1) == 1
        ctx.flush()
        assert ctx.frames_done() == 1
        with pytest.raises(vmafdnn.InvalidArgumentError):
            ctx.read_pictures(None, DARK, 6)
        ctx.flush()
        assert ctx.frames_done() == 1
        assert ctx.feature("stall", 5) == pytest.approx(0.2)
        ctx.reset()
        assert ctx.frames_done() == 0
        # a stalled frame's failure, reported by a flush, is not reported again
        ctx.read_pictures(None, BRIGHT, 0)
        with Canceller(ctx):
            with pytest.raises(vmafdnn.RunCancelledError, match=r"frame 0 \(scored in flight\)"):
                ctx.flush()
        assert ctx.frames_done() == 1
        ctx.flush()
        assert ctx.frames_done() == 1


def test_a_lone_batch_waits_but_frames_done_does_not(stage):
    # threads 0, batch 4: one worker waits for four queued frames. Fewer stay
    # not done (frames_done does not hurry them, nor wait); a feature of one
    # of them waits for it, and the frames after it are done with it.
    bm = stage("batch_mean", "bm", {"native_resolution": True})
    pics = pictures(3, 7)
    with vmafdnn.Context(threads=0, batch=4) as ctx, vmafdnn.Context(threads=0) as slow:
        ctx.use_model(bm)
        slow.use_model(bm)
        for i, p in enumerate(pics):
            ctx.read_pictures(None, p, i)
            slow.read_pictures(None, p, i)
        for _ in range(20):
            assert ctx.frames_done() == 0  # the worker waits for a fourth frame
        assert get(ctx, "bm", 1) == get(slow, "bm", 1)
        assert ctx.frames_done() == 3
        assert [get(ctx, "bm", i) for i in range(3)] == [get(slow, "bm", i) for i in range(3)]


def test_frames_done_from_another_thread_while_one_reads(stage):
    """A Context shared by a reader and a poller: the poller's done frames
    read their final values (or nothing yet for a model running behind), and
    a context with no model running behind never counts fewer done frames
    than before."""
    paths = temporal_models(stage)
    n = 60
    pics = pictures(n, 11)
    with vmafdnn.Context(threads=0) as slow:
        for p in paths:
            slow.use_model(p)
        for i, p in enumerate(pics):
            slow.read_pictures(None, p, i)
        slow.flush()
        final = {(k, i): get(slow, k, i) for k in TEMPORAL_KEYS for i in range(n)}
    for models, behind in ((paths, True), ([paths[0], paths[3]], False)):
        with vmafdnn.Context(threads=2) as ctx:
            for p in models:
                ctx.use_model(p)
            keys = TEMPORAL_KEYS if behind else ("m", "bits", "nr")
            read = [0]
            errors = []
            finished = threading.Event()

            def poller():
                rnd, last = random.Random(3), 0
                try:
                    while not finished.is_set():
                        d = ctx.frames_done()
                        assert d <= read[0] + 1
                        assert behind or d >= last, (d, last)
                        last = d
                        if d:
                            t = rnd.randrange(d)
                            k = rnd.choice(keys)
                            v = get(ctx, k, t)
                            if k in ("m2", "m3"):
                                assert v is None or v == final[k, t], (k, t)
                            else:
                                assert v == final[k, t], (k, t)
                except BaseException as e:  # reported by the main thread
                    errors.append(e)

            thread = threading.Thread(target=poller)
            thread.start()
            try:
                for i, p in enumerate(pics):
                    ctx.read_pictures(None, p, i)
                    read[0] += 1
            finally:
                finished.set()
                thread.join()
            assert not errors, errors[0]
            ctx.flush()
            assert ctx.frames_done() == n
            for k in keys:
                assert [get(ctx, k, i) for i in range(n)] == [final[k, i] for i in range(n)]


def test_close_and_cancel_race_frames_done(stage):
    # One thread polls frames_done, another cancels, the main one reads then
    # closes: every failure is a cancelled frame scored in flight, the poller
    # ends with ClosedError, nothing hangs.
    nr = stage("nr_mean", "nr")
    for round_ in range(5):
        ctx = vmafdnn.Context(threads=2)
        ctx.use_model(nr)
        outcome = []

        def poller():
            try:
                while True:
                    try:
                        ctx.frames_done()
                    except vmafdnn.RunCancelledError as e:
                        assert "(scored in flight)" in str(e)
            except vmafdnn.ClosedError:
                outcome.append("closed")
            except BaseException as e:
                outcome.append(e)

        thread = threading.Thread(target=poller)
        with Canceller(ctx):
            thread.start()
            for i, p in enumerate(pictures(30, round_)):
                while True:
                    try:
                        ctx.read_pictures(None, p, i)
                        break
                    except vmafdnn.RunCancelledError as e:
                        if "(scored in flight)" not in str(e):
                            break  # this frame itself (scored on this thread): read
            ctx.close()
        thread.join()
        assert outcome == ["closed"], outcome


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="ASan's allocator lock is not fork-safe")
def test_a_forked_child_cannot_ask_which_frames_are_done(stage):
    with stalled(threads=2) as ctx:
        ctx.use_model(stage("stall_bright", "stall"))
        ctx.read_pictures(None, DARK, 0)
        ctx.read_pictures(None, BRIGHT, 1)  # the workers are busy at the fork
        poll(ctx, 1)
        def in_child():
            try:
                ctx.frames_done()
            except vmafdnn.ClosedError as e:
                return 0 if "fork()" in str(e) else 2
            return 1

        assert child_code(in_child) == 0
        assert ctx.frames_done() == 1
        with Canceller(ctx):
            failure_then_done(ctx, 2, r"frame 1 \(scored in flight\)")
        assert ctx.frames_done() == 2


@pytest.mark.parametrize("then", ["frames_done", "read"])
def test_a_failure_merged_by_attach_or_feature_is_not_lost(stage, then):
    """A frame that failed in flight and was merged by a call that does not
    report (an attach mid-clip, which drops the frames in flight, or a
    feature of that frame, which waits for it) is reported by the next call
    that can, once."""
    nr = stage("nr_mean", "nr")
    feat = stage("pair_min", "y", {"output_keys": ["y"], "input_sources": {
        "a": {"feature": "x"}, "b": {"feature": "x"}}})
    pics = pictures(6, 3)
    for merge_by in ("attach", "feature"):
        with vmafdnn.Context(threads=2) as ctx:
            ctx.use_model(nr)
            ctx.use_model(feat)
            for i in (0, 2, 3):  # appending waits for the frames in flight: first
                ctx.feature_append("x", i, 1.0)
            for i in range(3):
                ctx.read_pictures(None, pics[i], i)
            if merge_by == "attach":
                ctx.use_model(stage("nr_mean", "nr2"))
            else:
                with pytest.raises(vmafdnn.ModelNotFoundError):
                    ctx.feature("y", 1)  # waits for frame 1: no value
            if then == "frames_done":
                with pytest.raises(vmafdnn.ModelNotFoundError,
                                   match=r"frame 1 \(scored in flight\)"):
                    ctx.frames_done()
            else:
                with pytest.raises(vmafdnn.ModelNotFoundError,
                                   match=r"frame 1 \(scored in flight\)"):
                    ctx.read_pictures(None, pics[3], 3)
                ctx.read_pictures(None, pics[3], 3)  # not taken the first time
            ctx.flush()
            assert ctx.frames_done() == (3 if then == "frames_done" else 4)
            assert ctx.feature("nr", 1) == get_value(nr, pics[1])


def get_value(path, pic):
    with vmafdnn.Context(threads=0) as one:
        one.use_model(path)
        one.read_pictures(None, pic, 0)
        return one.feature(os.path.basename(path)[:-len(".onnx")], 0)


def test_a_frame_is_not_done_while_the_frame_after_it_is_in_flight(stage):
    # m2 = min(stall[t], stall[t + 1]) runs one frame behind: with frame 2
    # stalled in flight, frame 1 (whose m2 frame 2's merge stores) is not
    # done, frame 0 is, and its m2 reads at once.
    with stalled(threads=2) as ctx:
        ctx.use_model(stage("stall_bright", "stall"))
        ctx.use_model(stage("pair_min", "min1", {"output_keys": ["m2"], "input_sources": {
            "a": {"feature": "stall"}, "b": {"feature": "stall", "offset": 1}}}))
        ctx.read_pictures(None, DARK, 0)
        ctx.read_pictures(None, const(0), 1)
        assert poll(ctx, 2) == 2  # both merged; m2 of frame 1 waits for frame 2
        ctx.read_pictures(None, BRIGHT, 2)
        for _ in range(20):
            done = ctx.frames_done()  # (the Context's repr would wait for frame 2)
            assert done == 1
        assert ctx.feature("m2", 0) == 0.0
        assert ctx.feature("stall", 1) == 0.0
        assert ctx.frames_done() == 1
        with Canceller(ctx):
            failure_then_done(ctx, 3, r"frame 2 \(scored in flight\)")
        # frame 2 failed: m2 of frame 1 has nothing to read
        with pytest.raises(vmafdnn.ModelNotFoundError):
            ctx.feature("m2", 1)
