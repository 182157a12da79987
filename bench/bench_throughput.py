"""Whole-process throughput of psnr + ssim: the vmafdnn CLI against libvmaf and FFmpeg's filters.

    python bench/bench_throughput.py [--sizes 1920x1080,3840x2160] [--frames 60] [--rounds 3]
                                     [--threads 1,all] [--dir DIR] [--ffmpeg PATH]

All contenders read the same Y4M files: FFmpeg's testsrc2 (8-bit 4:2:0, 25 fps) and its libx264
crf-40 round trip, made with the static FFmpeg 9.0.2 of the imageio-ffmpeg 0.8.1 wheel
(`pip install imageio-ffmpeg==0.8.1`), which has libvmaf. For each size and thread count N:

  vmafdnn   python -m vmafdnn -r REF -d DIST --tiny-model psnr_y --tiny-model ssim_y
            --tiny-threads N -q -o OUT.json
  libvmaf   ffmpeg -i DIST -i REF -lavfi "[0:v][1:v]libvmaf=model='':
            feature='name=psnr|name=float_ssim\\:scale=1':n_threads=N" -f null -
            (psnr on all three planes, float_ssim on luma without its default downscaling)
  ffmpeg    ffmpeg -filter_threads N -i DIST -i REF -lavfi "...[a][c]psnr;[b][d]ssim" -f null -
            (FFmpeg's own filters: 8x8-block SSIM, not the Gaussian one, on all planes)

Each is a whole process timed from start to exit (start-up, model load, reading and scoring),
its peak RSS and CPU time (all threads) taken from os.wait4. The contenders take turns for
--rounds rounds; the median wall time, the median CPU time per frame and the largest peak RSS
count, and the spread of the rounds is printed (the machines these run on are shared). "all" is os.cpu_count(). The pooled luma PSNR of vmafdnn and libvmaf must
agree (1e-3 dB); the SSIMs differ by definition and are printed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_score import make_clip, timed_child  # noqa: E402


def static_ffmpeg(path):
    if path:
        return path
    try:
        import imageio_ffmpeg
    except ImportError:
        sys.exit("bench_throughput.py needs the static FFmpeg with libvmaf: "
                 "pip install imageio-ffmpeg==0.8.1 (or pass --ffmpeg)")
    return imageio_ffmpeg.get_ffmpeg_exe()


def contenders(ff, cli, ref, dist, threads, tmp):
    out = {name: os.path.join(tmp, f"{name}-{threads}.json") for name in ("vmafdnn", "libvmaf")}
    quiet = [ff, "-nostdin", "-v", "error"]
    features = "name=psnr|name=float_ssim\\:scale=1"
    return out, {
        "vmafdnn": cli + ["-r", ref, "-d", dist, "--tiny-model", "psnr_y", "--tiny-model",
                          "ssim_y", "--tiny-threads", str(threads), "-q", "-o", out["vmafdnn"]],
        "libvmaf": quiet + ["-i", dist, "-i", ref, "-lavfi",
                            f"[0:v][1:v]libvmaf=model='':feature='{features}':n_threads={threads}"
                            f":log_fmt=json:log_path={out['libvmaf']}", "-f", "null", "-"],
        "ffmpeg": quiet + ["-filter_threads", str(threads), "-i", dist, "-i", ref, "-lavfi",
                           "[0:v]split[a][b];[1:v]split[c][d];[a][c]psnr;[b][d]ssim",
                           "-f", "null", "-"],
    }


def pooled(path, psnr, ssim):
    with open(path) as f:
        metrics = json.load(f)["pooled_metrics"]
    return metrics[psnr]["mean"], metrics[ssim]["mean"]


def measure(ff, cli, ref, dist, frames, threads, rounds, tmp):
    """{contender: (median fps, min fps, max fps, peak RSS MiB)} for one thread count."""
    out, cmds = contenders(ff, cli, ref, dist, threads, tmp)
    walls = {name: [] for name in cmds}
    cpus = {name: [] for name in cmds}
    rss = dict.fromkeys(cmds, 0.0)
    for _ in range(rounds):
        for name, cmd in cmds.items():
            wall, peak, cpu = timed_child(cmd)
            walls[name].append(wall)
            cpus[name].append(cpu)
            rss[name] = max(rss[name], peak)
    ours, theirs = pooled(out["vmafdnn"], "psnr_y", "ssim_y"), pooled(out["libvmaf"], "psnr_y",
                                                                       "float_ssim")
    if abs(ours[0] - theirs[0]) > 1e-3:
        sys.exit(f"pooled psnr_y differs: vmafdnn {ours[0]}, libvmaf {theirs[0]}")
    results = {name: (frames / statistics.median(w), frames / max(w), frames / min(w), rss[name])
               for name, w in walls.items()}
    print(f"  {threads} thread(s); pooled psnr_y {ours[0]:.4f} (libvmaf {theirs[0]:.4f}), ssim_y "
          f"{ours[1]:.6f} (libvmaf float_ssim scale=1 {theirs[1]:.6f})")
    for name, (fps, lo, hi, peak) in results.items():
        cpu_ms = 1000 * statistics.median(cpus[name]) / frames
        print(f"    {name:8s} {fps:7.2f} fps (rounds {lo:.2f}-{hi:.2f}), peak RSS {peak:5.0f} MiB, "
              f"CPU {cpu_ms:6.1f} ms/frame")
    print(f"    vmafdnn/libvmaf: fps {results['vmafdnn'][0] / results['libvmaf'][0]:.2f}x, "
          f"RSS {results['vmafdnn'][3] / results['libvmaf'][3]:.2f}x; vmafdnn/ffmpeg fps "
          f"{results['vmafdnn'][0] / results['ffmpeg'][0]:.2f}x", flush=True)
    return results


def report_scaling(results, threads_list):
    if len(threads_list) > 1:
        lo, hi = threads_list[0], threads_list[-1]
        print(f"  scaling {lo}->{hi} threads: " + ", ".join(
            f"{name} {results[hi][name][0] / results[lo][name][0]:.2f}x"
            for name in results[lo]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1920x1080,3840x2160")
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default="1,all", help="comma-separated; all: every CPU")
    parser.add_argument("--dir", help="keep the clips here (reused when present)")
    parser.add_argument("--ffmpeg", help="an FFmpeg with libvmaf (default: imageio-ffmpeg's)")
    parser.add_argument("--cli", default=f"{sys.executable} -m vmafdnn",
                        help="the scoring command, split at spaces (default: %(default)s)")
    args = parser.parse_args(argv)
    threads_list = sorted({os.cpu_count() if t == "all" else int(t)
                           for t in args.threads.split(",")})
    ff = static_ffmpeg(args.ffmpeg)

    version = subprocess.run(args.cli.split() + ["--version"], capture_output=True, text=True)
    print(f"{version.stdout.strip() or version.stderr.strip()}; {os.path.basename(ff)}; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; {args.frames} frames, median of "
          f"{args.rounds}")
    with tempfile.TemporaryDirectory(prefix="vmafdnn-throughput-") as tmp:
        for size in args.sizes.split(","):
            clip_dir = os.path.join(args.dir or tmp, f"{size}-{args.frames}")
            os.makedirs(clip_dir, exist_ok=True)
            ref, dist = make_clip(clip_dir, size, args.frames, ff)
            print(f"{size} 8-bit 4:2:0, psnr + ssim", flush=True)
            results = {t: measure(ff, args.cli.split(), ref, dist, args.frames, t, args.rounds,
                                  tmp) for t in threads_list}
            report_scaling(results, threads_list)


if __name__ == "__main__":
    main()
