"""Real clip pairs for the scoring tests, made with FFmpeg once per session.

A clip pair is FFmpeg's testsrc2 pattern (moving, coloured, with text: real
edges and flat areas) as the reference Y4M, and the same frames encoded with
libx264 at crf 40 (visible blocking and blur) and decoded back as the
distorted Y4M. Without FFmpeg the tests that need it skip with a hint, except
in CI (the CI variable set), where a missing FFmpeg is a failure. Tests of
arguments and errors use a small synthetic pair instead, made without FFmpeg.
"""
import os
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from vmafdnn.video import Frame, write_y4m


class ClipPair(NamedTuple):
    ref: Path
    dist: Path
    encoded: Path  # the x264 file the distorted clip was decoded from (None: synthetic)
    width: int
    height: int
    frames: int
    bitdepth: int
    pix_fmt: str   # FFmpeg's name: yuv420p, yuv420p10le


def noisy_pairs(n: int, h: int, w: int, seed: int = 0):
    """n (reference, distorted) 8-bit luma pairs of h x w in memory: random references and
    the same plus noise of +-6, for the tests that need pictures, not clips."""
    rng = np.random.default_rng(seed)
    ref = [rng.integers(0, 256, (h, w)).astype(np.uint8) for _ in range(n)]
    dis = [np.clip(r.astype(int) + rng.integers(-6, 7, r.shape), 0, 255).astype(np.uint8)
           for r in ref]
    return list(zip(ref, dis))


def ffmpeg() -> str:
    """The ffmpeg executable; skips (fails under CI) when there is none.

    In order: $VMAFDNN_TEST_FFMPEG (tools/test.sh sets it), the static build
    in the imageio-ffmpeg wheel (FFmpeg 9 with libx264 and libvmaf), then
    ffmpeg on PATH.
    """
    exe = os.environ.get("VMAFDNN_TEST_FFMPEG")
    if exe:
        if not os.access(exe, os.X_OK):
            pytest.fail(f"VMAFDNN_TEST_FFMPEG={exe!r} is not an executable")
        return exe
    try:
        import imageio_ffmpeg
        exe = imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):
        exe = None
    exe = exe or shutil.which("ffmpeg")
    if exe:
        return exe
    hint = ("pip install imageio-ffmpeg==0.8.1, set VMAFDNN_TEST_FFMPEG, or run "
            "tools/test.sh")
    if os.environ.get("CI"):
        pytest.fail(f"no ffmpeg found, and CI must run the real-video tests ({hint})")
    pytest.skip(f"no ffmpeg found: {hint} to run the real-video tests")


def run_ffmpeg(*args) -> None:
    subprocess.run([ffmpeg(), "-nostdin", "-v", "error", "-y", *map(str, args)], check=True)


def make_pair(directory: Path, width: int, height: int, frames: int,
              pix_fmt: str = "yuv420p", crf: int = 40) -> ClipPair:
    directory.mkdir(parents=True, exist_ok=True)
    ref, encoded, dist = directory / "ref.y4m", directory / "dist.mp4", directory / "dist.y4m"
    # -strict -1: FFmpeg's Y4M muxer calls the deep formats unofficial.
    y4m = ["-pix_fmt", pix_fmt, "-strict", "-1"]
    run_ffmpeg("-f", "lavfi", "-i", f"testsrc2=size={width}x{height}:rate=25",
               "-frames:v", frames, *y4m, ref)
    run_ffmpeg("-i", ref, "-c:v", "libx264", "-preset", "veryfast", "-crf", crf,
               "-pix_fmt", pix_fmt, encoded)
    run_ffmpeg("-i", encoded, *y4m, dist)
    bitdepth = 10 if "10" in pix_fmt else 8
    return ClipPair(ref, dist, encoded, width, height, frames, bitdepth, pix_fmt)


def to_raw(clip: Path, raw: Path) -> Path:
    """The frames of a Y4M clip as headerless planar YUV (same pixel format)."""
    run_ffmpeg("-i", clip, "-f", "rawvideo", raw)
    return raw


# Test modules import these by their function names; tests ask for "clips8"
# and "clips10".
@pytest.fixture(scope="session", name="clips8")
def clips8_fixture(tmp_path_factory) -> ClipPair:
    """352x288 (CIF), 8 frames, 8-bit 4:2:0."""
    ffmpeg()
    return make_pair(tmp_path_factory.mktemp("clips8"), 352, 288, 8)


@pytest.fixture(scope="session", name="clips10")
def clips10_fixture(tmp_path_factory) -> ClipPair:
    """320x240, 5 frames, 10-bit 4:2:0 (x264 High 10)."""
    ffmpeg()
    return make_pair(tmp_path_factory.mktemp("clips10"), 320, 240, 5, "yuv420p10le")


@pytest.fixture(scope="session", name="synth")
def synth_fixture(tmp_path_factory) -> ClipPair:
    """64x48, 4 frames, 8-bit 4:2:0 noise and a noisier copy, made with numpy."""
    directory = tmp_path_factory.mktemp("synth")
    rng = np.random.default_rng(7)
    width, height, frames = 64, 48, 4

    def frame(y, index):
        chroma = np.full((height // 2, width // 2), 128, np.uint8)
        return Frame(y, chroma, chroma.copy(), 8, index, "420")

    refs = [rng.integers(0, 256, (height, width), dtype=np.uint8) for _ in range(frames)]
    dists = [np.clip(y.astype(np.int16) + rng.integers(-12, 13, y.shape), 0, 255)
             .astype(np.uint8) for y in refs]
    ref, dist = directory / "ref.y4m", directory / "dist.y4m"
    write_y4m(ref, [frame(y, i) for i, y in enumerate(refs)], fps=25)
    write_y4m(dist, [frame(y, i) for i, y in enumerate(dists)], fps=25)
    return ClipPair(ref, dist, None, width, height, frames, 8, "yuv420p")
