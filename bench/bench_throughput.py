"""Whole-process throughput of psnr + ssim, float_ssim or VMAF: the vmafdnn CLI against libvmaf (and FFmpeg's filters).

    python bench/bench_throughput.py [--sizes 1920x1080,3840x2160] [--frames 60] [--rounds 3]
                                     [--threads 1,all] [--dir DIR] [--ffmpeg PATH]
                                     [--cli [LABEL=]COMMAND ...] [--only vmafdnn,libvmaf,ffmpeg]
                                     [--metric psnr_ssim|float_ssim|vmaf] [--pairs] [--forms]
                                     [--bpc 8|10|12]

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

With --metric vmaf: vmafdnn `--tiny-model vmaf` against libvmaf's
`model=version=vmaf_v0.6.1:n_threads=N` (FFmpeg has no VMAF of its own); pooled VMAF must agree
within 0.1. With --metric float_ssim: `--tiny-model float_ssim` against libvmaf's
`feature=name=float_ssim` (its default, automatic downscaling: by 4 at 1080p); within 2e-4.

--cli names the scoring command (default: this interpreter's `-m vmafdnn`); given more than once,
as LABEL=COMMAND, each is a contender "vmafdnn LABEL" (say, the build before a change and the one
after it, in the same rounds so that they see the same machine), and their per-frame scores must be
equal. --only drops contenders (libvmaf at 2160p takes minutes).

--bpc 10 or 12 scores the same clips converted to that depth (yuv420p10le / yuv420p12le, by the
same FFmpeg, once): every contender reads 16-bit words per sample.

--forms adds the contender "vmafdnn onnx-form": the same command with VMAFDNN_MODEL_FORMS=0, so
that VMAF's features run as the pure-ONNX graph on ORT's CPU EP instead of the library's fused
kernels (its per-frame differences from the kernel form and from libvmaf are printed).

--pairs also runs two copies of each contender at 1 thread at the same time, on the same files
(its "2 x 1 thread" row: 2 x frames over the later copy's wall time): what two independent jobs
get from this machine's cores and memory, the ceiling for one job on 2 threads. Each contender's
2-thread fps is then also printed as a share of its own pair's.

Each is a whole process timed from start to exit (start-up, model load, reading and scoring),
its peak RSS and CPU time (all threads) taken from os.wait4. The contenders take turns for
--rounds rounds; the median wall time, the median CPU time per frame and the largest peak RSS
count, and the spread of the rounds is printed (the machines these run on are shared). "all" is os.cpu_count(). The pooled luma PSNR of vmafdnn and libvmaf must
agree (1e-3 dB); the SSIMs differ by definition and are printed.
"""
import argparse
import concurrent.futures
import json
import os
import re
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


# What each side computes: vmafdnn's models, libvmaf's options, the pooled metrics compared
# (ours, theirs) and the largest pooled difference allowed.
METRICS = {
    "psnr_ssim": (["psnr_y", "ssim_y"], "model='':feature='name=psnr|name=float_ssim\\:scale=1'",
                  ("psnr_y", "psnr_y"), ("ssim_y", "float_ssim"), 1e-3),
    "float_ssim": (["float_ssim"], "model='':feature='name=float_ssim'",
                   ("float_ssim", "float_ssim"), ("float_ssim", "float_ssim"), 2e-4),
    "vmaf": (["vmaf"], "model=version=vmaf_v0.6.1", ("vmaf", "vmaf"), ("adm2", "integer_adm2"),
             0.1),
}
TITLES = {"psnr_ssim": "psnr + ssim", "float_ssim": "float_ssim", "vmaf": "VMAF"}


#: --forms: the contender that runs VMAF's pure-ONNX features graph (VMAFDNN_MODEL_FORMS=0)
FORMS_LABEL = "onnx-form"


def contenders(ff, clis, ref, dist, threads, tmp, only, metric, forms=False):
    """({name: report path}, {name: command}) of the contenders kept by `only`."""
    quiet = [ff, "-nostdin", "-v", "error"]
    models, options = METRICS[metric][:2]
    out, cmds = {}, {}
    for label, cli in clis:
        name = f"vmafdnn {label}" if label else "vmafdnn"
        if forms and label == FORMS_LABEL:  # the same build on the model's pure-ONNX form
            cli = ["env", "VMAFDNN_MODEL_FORMS=0"] + cli
        out[name] = os.path.join(tmp, f"{name.replace(' ', '-')}-{threads}.json")
        cmds[name] = cli + ["-r", ref, "-d", dist, "--tiny-threads", str(threads), "-q", "-o",
                            out[name]]
        for model in models:
            cmds[name] += ["--tiny-model", model]
    out["libvmaf"] = os.path.join(tmp, f"libvmaf-{threads}.json")
    cmds["libvmaf"] = quiet + ["-i", dist, "-i", ref, "-lavfi",
                               f"[0:v][1:v]libvmaf={options}:"
                               f"n_threads={threads}:log_fmt=json:log_path={out['libvmaf']}",
                               "-f", "null", "-"]
    cmds["ffmpeg"] = quiet + ["-filter_threads", str(threads), "-i", dist, "-i", ref, "-lavfi",
                              "[0:v]split[a][b];[1:v]split[c][d];[a][c]psnr;[b][d]ssim",
                              "-f", "null", "-"]
    if metric != "psnr_ssim":
        del cmds["ffmpeg"]
    cmds = {name: cmd for name, cmd in cmds.items() if name.split()[0] in only}
    return out, cmds


def frame_scores(path):
    with open(path) as f:
        return [frame["metrics"] for frame in json.load(f)["frames"]]


def pooled(path, *names):
    with open(path) as f:
        metrics = json.load(f)["pooled_metrics"]
    return tuple(metrics[name]["mean"] for name in names)


def run_pair(cmd, out_path):
    """Two copies of cmd at once (the second writes beside out_path): (the later wall time,
    the larger peak RSS, the summed CPU time)."""
    twin = [a.replace(out_path, out_path + ".twin") for a in cmd]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(timed_child, [cmd, twin]))
    return max(r[0] for r in runs), max(r[1] for r in runs), sum(r[2] for r in runs)


def max_frame_difference(a, b, key, their_key=None):
    return max(abs(x[key] - y[their_key or key]) for x, y in zip(a, b))


def measure(ff, clis, ref, dist, frames, threads, rounds, tmp, only, metric, pair=False,
            forms=False):
    """{contender: (median fps, min fps, max fps, peak RSS MiB)} for one thread count; with
    `pair`, two copies at once per contender (fps counts both copies' frames)."""
    out, cmds = contenders(ff, clis, ref, dist, threads, tmp, only, metric, forms)
    (main, main_theirs), (second, second_theirs), tolerance = METRICS[metric][2:]
    walls = {name: [] for name in cmds}
    cpus = {name: [] for name in cmds}
    rss = dict.fromkeys(cmds, 0.0)
    for _ in range(rounds):
        for name, cmd in cmds.items():
            wall, peak, cpu = run_pair(cmd, out[name]) if pair else timed_child(cmd)
            if pair:  # two clips' frames in that time and CPU
                wall, cpu = wall / 2, cpu / 2
            walls[name].append(wall)
            cpus[name].append(cpu)
            rss[name] = max(rss[name], peak)
    ours = [name for name in cmds if name.startswith("vmafdnn")]
    pure = f"vmafdnn {FORMS_LABEL}"
    if pure in ours:  # another form: its scores are compared, not required equal
        ours.remove(pure)
        if ours:
            d = max_frame_difference(frame_scores(out[pure]), frame_scores(out[ours[0]]), main)
            print(f"  {pure}: per-frame |d{main}| against {ours[0]} up to {d:.6f}")
        if "libvmaf" in cmds:
            d = max_frame_difference(frame_scores(out[pure]), frame_scores(out["libvmaf"]), main,
                                     main_theirs)
            print(f"  {pure}: per-frame |d{main}| against libvmaf up to {d:.6f}")
    if ours:
        first = frame_scores(out[ours[0]])
        for name in ours[1:]:
            if frame_scores(out[name]) != first:
                sys.exit(f"per-frame scores differ: {ours[0]} and {name}")
        value, value2 = pooled(out[ours[0]], main, second)
        line = (f"  {'2 x 1 thread (two processes at once)' if pair else f'{threads} thread(s)'}"
                f"; pooled {main} {value:.4f}, {second} {value2:.6f}")
        if len(ours) > 1:
            line += f" (per-frame scores equal in {len(ours)} builds)"
        if "libvmaf" in cmds:
            theirs = pooled(out["libvmaf"], main_theirs, second_theirs)
            if abs(value - theirs[0]) > tolerance:
                sys.exit(f"pooled {main} differs: vmafdnn {value}, libvmaf {theirs[0]}")
            line += f"; libvmaf {main_theirs} {theirs[0]:.4f}, {second_theirs} {theirs[1]:.6f}"
            d = max_frame_difference(first, frame_scores(out["libvmaf"]), main, main_theirs)
            line += f"; per-frame |d{main}| up to {d:.6f}"
        print(line)
    results = {name: (frames / statistics.median(w), frames / max(w), frames / min(w), rss[name])
               for name, w in walls.items()}
    for name, (fps, lo, hi, peak) in results.items():
        cpu_ms = 1000 * statistics.median(cpus[name]) / frames
        print(f"    {name:14s} {fps:7.2f} fps (rounds {lo:.2f}-{hi:.2f}), peak RSS {peak:5.0f} "
              f"MiB, CPU {cpu_ms:6.1f} ms/frame")
    for name in ours + ([pure] if pure in results else []):
        parts = []
        if "libvmaf" in results:
            parts.append(f"/libvmaf fps {results[name][0] / results['libvmaf'][0]:.2f}x, RSS "
                         f"{results[name][3] / results['libvmaf'][3]:.2f}x")
        if "ffmpeg" in results:
            parts.append(f"/ffmpeg fps {results[name][0] / results['ffmpeg'][0]:.2f}x")
        if name != pure and pure in results:
            parts.append(f"/{FORMS_LABEL} fps {results[name][0] / results[pure][0]:.2f}x")
        if parts:
            print(f"    {name}" + "; ".join(parts))
    sys.stdout.flush()
    return results, (first if ours else None)


def report_scaling(results, threads_list):
    if len(threads_list) > 1:
        lo, hi = threads_list[0], threads_list[-1]
        print(f"  scaling {lo}->{hi} threads: " + ", ".join(
            f"{name} {results[hi][name][0] / results[lo][name][0]:.2f}x"
            for name in results[lo]))


def deepen(path, bpc, ff):
    """The Y4M file at `path` converted to `bpc` bits beside it (made once, reused)."""
    out = f"{path[:-len('.y4m')]}-{bpc}bit.y4m"
    if not os.path.exists(out):
        subprocess.run([ff, "-nostdin", "-v", "error", "-y", "-i", path, "-pix_fmt",
                        f"yuv420p{bpc}le", "-strict", "-1", out + ".part.y4m"], check=True)
        os.replace(out + ".part.y4m", out)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1920x1080,3840x2160")
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default="1,all", help="comma-separated; all: every CPU")
    parser.add_argument("--dir", help="keep the clips here (reused when present)")
    parser.add_argument("--ffmpeg", help="an FFmpeg with libvmaf (default: imageio-ffmpeg's)")
    parser.add_argument("--cli", action="append",
                        help="[LABEL=]the scoring command, split at spaces; repeat to compare "
                             f"builds (default: {sys.executable} -m vmafdnn)")
    parser.add_argument("--only", default="vmafdnn,libvmaf,ffmpeg",
                        help="the contenders to run (default: %(default)s)")
    parser.add_argument("--metric", choices=sorted(METRICS), default="psnr_ssim",
                        help="psnr_y + ssim_y (default) or VMAF")
    parser.add_argument("--forms", action="store_true",
                        help="also the pure-ONNX form of the models (VMAFDNN_MODEL_FORMS=0): "
                             "VMAF's features graph on ORT's CPU EP beside the fused kernels")
    parser.add_argument("--bpc", type=int, choices=[8, 10, 12], default=8,
                        help="the clips' bit depth (converted from the 8-bit ones)")
    parser.add_argument("--pairs", action="store_true",
                        help="also two 1-thread copies at once: the machine's ceiling for 2")
    args = parser.parse_args(argv)
    clis = []
    for value in args.cli or [f"{sys.executable} -m vmafdnn"]:
        m = re.fullmatch(r"([\w.+-]+)=(.*)", value)
        clis.append((m.group(1), m.group(2).split()) if m else ("", value.split()))
    if len(clis) > 1 and not all(label for label, _ in clis):
        parser.error("--cli given more than once needs LABEL=COMMAND each time")
    if args.forms:
        clis.append((FORMS_LABEL, clis[0][1]))
    only = set(args.only.split(","))
    if not only <= {"vmafdnn", "libvmaf", "ffmpeg"}:
        parser.error(f"--only: unknown contender in {args.only}")
    threads_list = sorted({os.cpu_count() if t == "all" else int(t)
                           for t in args.threads.split(",")})
    ff = static_ffmpeg(args.ffmpeg)

    version = subprocess.run(clis[0][1] + ["--version"], capture_output=True, text=True)
    print(f"{version.stdout.strip() or version.stderr.strip()}; {os.path.basename(ff)}; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; {args.frames} frames, median of "
          f"{args.rounds}")
    with tempfile.TemporaryDirectory(prefix="vmafdnn-throughput-") as tmp:
        for size in args.sizes.split(","):
            clip_dir = os.path.join(args.dir or tmp, f"{size}-{args.frames}")
            os.makedirs(clip_dir, exist_ok=True)
            ref, dist = make_clip(clip_dir, size, args.frames, ff)
            if args.bpc > 8:
                ref, dist = (deepen(path, args.bpc, ff) for path in (ref, dist))
            print(f"{size} {args.bpc}-bit 4:2:0, {TITLES[args.metric]}",
                  flush=True)
            results, scores = {}, {}
            for t in threads_list:
                results[t], scores[t] = measure(ff, clis, ref, dist, args.frames, t, args.rounds,
                                                tmp, only, args.metric, forms=args.forms)
            # Frames in flight must not change a score (docs/throughput.md).
            if any(scores[t] != scores[threads_list[0]] for t in threads_list):
                sys.exit("per-frame scores differ between thread counts")
            report_scaling(results, threads_list)
            if args.pairs:
                pairs, _ = measure(ff, clis, ref, dist, args.frames, 1, args.rounds, tmp, only,
                                   args.metric, pair=True, forms=args.forms)
                print("  2 x 1 thread vs 1 thread: " + ", ".join(
                    f"{name} {pairs[name][0] / results[threads_list[0]][name][0]:.2f}x"
                    for name in pairs))
                if 2 in results:
                    print("  2 threads as a share of 2 x 1 thread: " + ", ".join(
                        f"{name} {results[2][name][0] / pairs[name][0]:.2f}"
                        for name in pairs))


if __name__ == "__main__":
    main()
