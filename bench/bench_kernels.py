"""ms per frame of each CPU kernel (VIF, ADM, motion, psnr_y, ssim_y, float_ssim, sharpness_nr)
for two or more builds of tests/c/kernel_dump, in turns on the same clip pair.

    python bench/bench_kernels.py [--size 1920x1080] [--frames 20] [--bpc 8] [--rounds 8]
                                  [--dump LABEL=PATH ...] [--dir DIR]

The obvious alternative to a kernel change is the build before it: build kernel_dump at that
commit (``git worktree add /tmp/before REV && meson setup /tmp/before/b && meson compile -C
/tmp/before/b tests/c/kernel_dump``; before session 22 it was tests/c/vmaf_kernel_dump, which
times VIF, ADM and motion only) and pass both, the first being the one the ratios are against
(default: this checkout's build-c/tests/c/kernel_dump alone). The clip is FFmpeg's testsrc2 with
temporal noise and its x264 crf-30 round trip (imageio-ffmpeg's static FFmpeg), converted to
--bpc bits, made once per --dir. Each round runs every build once, in turns; the best round of
each kernel is kept (2 shared, noisy cores). The builds must print the same per-frame values
(17 digits) for the kernels both time; a difference is reported and the exit status is 1.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DUMP = os.path.join(ROOT, "build-c", "tests", "c", "kernel_dump")


def make_clips(ffmpeg, size, frames, bpc, out_dir):
    fmt = "yuv420p" if bpc == 8 else f"yuv420p{bpc}le"
    ref = os.path.join(out_dir, f"ref_{size}_{frames}_{bpc}.y4m")
    dist = os.path.join(out_dir, f"dist_{size}_{frames}_{bpc}.y4m")
    if os.path.exists(ref) and os.path.exists(dist):
        return ref, dist
    q = [ffmpeg, "-hide_banner", "-loglevel", "error", "-y"]
    mp4 = os.path.join(out_dir, f"dist_{size}_{frames}.mp4")
    subprocess.run(q + ["-f", "lavfi", "-i", f"testsrc2=size={size}:rate=25",
                        "-vf", "noise=alls=12:allf=t", "-frames:v", str(frames),
                        "-pix_fmt", fmt, "-strict", "-1", ref + ".tmp.y4m"], check=True)
    subprocess.run(q + ["-i", ref + ".tmp.y4m", "-c:v", "libx264", "-crf", "30",
                        "-preset", "ultrafast", "-pix_fmt", "yuv420p", mp4], check=True)
    subprocess.run(q + ["-i", mp4, "-pix_fmt", fmt, "-strict", "-1", dist], check=True)
    os.replace(ref + ".tmp.y4m", ref)
    return ref, dist


def run_dump(path, ref, dist):
    """({kernel: ms}, [per-frame dict], build) of one run."""
    out = subprocess.run([path, ref, dist], check=True, capture_output=True, text=True)
    ms, build = {}, "?"
    for line in out.stderr.splitlines():
        if line.startswith("ms total:"):
            words = line.split()[2:]
            ms = {words[i]: float(words[i + 1]) for i in range(0, len(words) - 1, 2)}
        elif line.startswith("builds: "):
            build = line.split(": ", 1)[1]
    return ms, [json.loads(line) for line in out.stdout.splitlines()], build


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--bpc", type=int, choices=(8, 10, 12), default=8)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--dump", action="append", default=[],
                    help="[LABEL=]a kernel_dump binary; repeat (the first is the reference)")
    ap.add_argument("--dir", help="keep the clips here (reused when present)")
    ap.add_argument("--ffmpeg", help="an FFmpeg with libx264 (default: imageio-ffmpeg's)")
    args = ap.parse_args(argv)

    dumps = {}
    for i, spec in enumerate(args.dump or [DEFAULT_DUMP]):
        label, _, path = spec.rpartition("=")
        dumps[label or f"build{i}"] = path
    for label, path in dumps.items():
        if not os.access(path, os.X_OK):
            sys.exit(f"{label}: {path} is not an executable kernel_dump")
    ffmpeg = args.ffmpeg
    if not ffmpeg:
        import imageio_ffmpeg
        ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
    out_dir = args.dir or tempfile.mkdtemp(prefix="bench_kernels_")
    os.makedirs(out_dir, exist_ok=True)
    ref, dist = make_clips(ffmpeg, args.size, args.frames, args.bpc, out_dir)

    best = {label: {} for label in dumps}
    frames, builds = {}, {}
    for _ in range(args.rounds):
        for label, path in dumps.items():
            ms, frames[label], builds[label] = run_dump(path, ref, dist)
            for kernel, t in ms.items():
                best[label][kernel] = min(best[label].get(kernel, float("inf")), t)

    first = next(iter(dumps))
    kernels = [k for k in best[first] if all(k in best[label] for label in dumps)]
    print(f"{args.size} {args.bpc}-bit, {args.frames} frames, best of {args.rounds} rounds in "
          f"turns; ms per frame")
    print("  " + " ".join(f"{k:>12}" for k in ["build"] + kernels))
    for label in dumps:
        cells = [f"{best[label][k] / args.frames:12.2f}" for k in kernels]
        print(f"  {label:>12}" + " ".join(cells) + f"   ({builds[label]})")
    for label in list(dumps)[1:]:
        # > 1: the first build is that much faster than this one
        ratios = [f"{best[label][k] / best[first][k]:11.2f}x" for k in kernels]
        print(f"  {'speed-up':>12}" + " ".join(ratios) + f"   ({first} against {label})")

    rc = 0
    for label in list(dumps)[1:]:
        for n, (a, b) in enumerate(zip(frames[first], frames[label])):
            differ = [k for k in a if k in b and a[k] != b[k]]
            if differ:
                print(f"  {label}: frame {n} differs from {first} in {differ}")
                rc = 1
                break
    return rc


if __name__ == "__main__":
    sys.exit(main())
