"""Frames per second of FFmpeg's vmafdnn filter against piping FFmpeg into the CLI.

    python bench/bench_ffmpeg.py [--frames 60] [--size 1920x1080] [--threads 0]
                                 [--model psnr_y --model ssim_y] [--repeat 3]

Both sides score the same clip pair (testsrc2 and its libx264 crf 40 round
trip, made with the system ffmpeg, or imageio-ffmpeg's static one) with the same models and thread count:

    filter: ffmpeg -i dist.y4m -i ref.y4m -lavfi vmafdnn=... -f null -
    pipe:   ffmpeg -i dist.y4m -f yuv4mpegpipe - | vmafdnn -r ref.y4m -d - ...
    mp4:    ffmpeg -i dist.mp4 -i ref.y4m -lavfi vmafdnn=... -f null -

(the patched ffmpeg of tools/build_ffmpeg.sh everywhere, so only the scoring
path differs; the mp4 line adds H.264 decoding, built without assembly).
With --threads N > 1 (frames in flight in both) the filter also runs with
threads=1, one frame at a time, and the ratio says what the frames in flight
give inside FFmpeg. Each side runs --repeat times in one process; the best
wall time counts, and the ratio of the two is printed.

--against DIR also runs the filter of another build, made by
`VMAFDNN_CACHE_DIR=DIR tools/build_ffmpeg.sh` from another checkout (say,
the commit before a change), taking turns with this build's filter: their
fps and ratio. --bpc 10 or 12 scores the clips converted to that depth.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CACHE = Path(os.environ.get("VMAFDNN_CACHE_DIR", Path.home() / ".cache" / "vmafdnn")) / "ffmpeg"


def make_clips(directory: Path, size: str, frames: int):
    system = shutil.which("ffmpeg")
    if not system:
        try:
            import imageio_ffmpeg
            system = imageio_ffmpeg.get_ffmpeg_exe()
        except ImportError:
            sys.exit("bench_ffmpeg: an ffmpeg with libx264 makes the clips: apt-get install "
                     "ffmpeg, or pip install imageio-ffmpeg")
    ref, enc, dist = directory / "ref.y4m", directory / "dist.mp4", directory / "dist.y4m"
    quiet = [system, "-nostdin", "-v", "error", "-y"]
    subprocess.run(quiet + ["-f", "lavfi", "-i", f"testsrc2=size={size}:rate=25",
                            "-frames:v", str(frames), "-pix_fmt", "yuv420p", str(ref)], check=True)
    subprocess.run(quiet + ["-i", str(ref), "-c:v", "libx264", "-preset", "veryfast",
                            "-crf", "40", str(enc)], check=True)
    subprocess.run(quiet + ["-i", str(enc), "-pix_fmt", "yuv420p", str(dist)], check=True)
    return ref, dist, enc


def best_walls(runs, repeat: int):
    """The best wall time of each (command, env) of runs, taking turns."""
    best = [float("inf")] * len(runs)
    for _ in range(repeat):
        for i, (cmd, env) in enumerate(runs):
            start = time.perf_counter()
            subprocess.run(cmd, shell=True, check=True, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def best_wall(cmd, repeat: int, env) -> float:
    return best_walls([(cmd, env)], repeat)[0]


def deepen(path: Path, bpc: int) -> Path:
    """The Y4M clip at `path` converted to `bpc` bits beside it."""
    import imageio_ffmpeg
    out = path.with_name(f"{path.stem}-{bpc}bit.y4m")
    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-nostdin", "-v", "error", "-y", "-i",
                    str(path), "-pix_fmt", f"yuv420p{bpc}le", "-strict", "-1", str(out)],
                   check=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads in all, as the filter's threads and --tiny-threads: N > 1 "
                    "scores N frames in flight (0: ORT's default per model)")
    ap.add_argument("--model", action="append", help="built-in name or .onnx path; repeatable "
                    "(default: psnr_y and ssim_y)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", help="the cache directory of another build of the filters "
                    "(VMAFDNN_CACHE_DIR=DIR tools/build_ffmpeg.sh), timed in turns with this one")
    ap.add_argument("--bpc", type=int, choices=[8, 10, 12], default=8)
    args = ap.parse_args()

    ffmpeg = os.environ.get("VMAFDNN_FFMPEG", str(CACHE / "bin" / "ffmpeg"))
    if not os.access(ffmpeg, os.X_OK):
        sys.exit(f"bench_ffmpeg: no patched ffmpeg at {ffmpeg}: run tools/build_ffmpeg.sh")
    import vmafdnn  # after the checks: only its ORT path and built-in models are needed
    env = dict(os.environ)
    env.setdefault("VMAFDNN_BUILTIN_MODELS", str(CACHE / "prefix" / "share" / "vmafdnn" / "models"))
    env.setdefault("VMAFDNN_ORT_LIBRARY", vmafdnn.ort_library_path())
    models = args.model or ["psnr_y", "ssim_y"]

    with tempfile.TemporaryDirectory(prefix="vmafdnn-bench-ffmpeg-") as tmp:
        ref, dist, enc = make_clips(Path(tmp), args.size, args.frames)
        if args.bpc > 8:
            ref, dist = deepen(ref, args.bpc), deepen(dist, args.bpc)
        opts = f"model={'|'.join(models)}:threads={args.threads}"
        filt = (f"{ffmpeg} -nostdin -v error -i {dist} -i {ref} "
                f"-lavfi '[0:v][1:v]vmafdnn={opts}' -f null -")
        cli_models = " ".join(f"--tiny-model {m}" for m in models)
        pipe = (f"{ffmpeg} -nostdin -v error -i {dist} -strict -1 -f yuv4mpegpipe - | "
                f"{sys.executable} -m vmafdnn -q -r {ref} -d - {cli_models} "
                f"--tiny-threads {args.threads}")
        mp4 = filt.replace(f"-i {dist} ", f"-i {enc} ")
        t_filter = best_wall(filt, args.repeat, env)
        t_pipe = best_wall(pipe, args.repeat, env)
        t_mp4 = best_wall(mp4, args.repeat, env)
        t_one = (best_wall(filt.replace(f":threads={args.threads}'", ":threads=1'"), args.repeat,
                           env) if args.threads > 1 else None)
        if args.against:
            other = Path(args.against) / "ffmpeg"
            other_env = dict(env, VMAFDNN_BUILTIN_MODELS=str(
                other / "prefix" / "share" / "vmafdnn" / "models"))
            t_this, t_other = best_walls(
                [(filt, env), (filt.replace(ffmpeg, str(other / "bin" / "ffmpeg"), 1),
                  other_env)], args.repeat)

    fps_filter, fps_pipe = args.frames / t_filter, args.frames / t_pipe
    print(f"{args.size} {args.bpc}-bit, {args.frames} frames, models {', '.join(models)}, "
          f"threads {args.threads}, best of {args.repeat}")
    print(f"  ffmpeg -lavfi vmafdnn        : {fps_filter:8.2f} fps ({t_filter:.2f} s)")
    print(f"  ffmpeg | vmafdnn CLI (pipe)  : {fps_pipe:8.2f} fps ({t_pipe:.2f} s)")
    print(f"  filter / pipe                : {fps_filter / fps_pipe:8.2f}x")
    print(f"  ffmpeg -i dist.mp4 -lavfi    : {args.frames / t_mp4:8.2f} fps ({t_mp4:.2f} s)")
    if t_one is not None:
        print(f"  filter, threads=1            : {args.frames / t_one:8.2f} fps ({t_one:.2f} s)")
        print(f"  threads={args.threads} / threads=1         : {t_one / t_filter:8.2f}x")
    if args.against:
        print(f"  filter, in turns with --against: {args.frames / t_this:8.2f} fps, the other "
              f"build {args.frames / t_other:8.2f} fps: {t_other / t_this:.2f}x")


if __name__ == "__main__":
    main()
