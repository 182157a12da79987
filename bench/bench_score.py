"""Frames per second and peak memory of the scoring CLI against a plain
Python script doing the same work with onnxruntime + numpy, same run.

    python bench/bench_score.py [--frames 30] [--size 1920x1080] [--rounds 3] [--dir DIR]

The clip is FFmpeg's testsrc2 (8-bit 4:2:0, 25 fps) and its libx264 crf-40
encode decoded back to Y4M. Both contenders are whole processes, timed from
start to exit (interpreter start, imports, model load, reading, scoring,
writing the JSON report), with one ONNX Runtime thread:

  cli       python -m vmafdnn -r REF -d DIST --tiny-threads 1 -q -o OUT
  baseline  this file's --baseline mode: Y4M read with numpy, luma
            normalised to float32, the same built-in .onnx files run by
            onnxruntime.InferenceSession, PSNR capped like the library,
            pooled means and a per-frame JSON report

Each configuration runs both contenders alternately for --rounds rounds;
the best wall time of each is kept (the machines are shared and noisy).
Peak memory is each child's own ru_maxrss (os.wait4, forked by a bare interpreter). The pooled means of
the two must agree (1e-4), so both did the same work. Configurations: FR
(psnr_y + ssim_y, the CLI's default) and FR+NR (plus sharpness_nr).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

CAP_DB_PER_BPC = (6, 12)  # psnr_y's sidecar: min(psnr, 6 * bpc + 12)


# -- the plain-Python baseline (runs in its own process) ------------------------------

def _read_y4m_luma(path):
    """Yields the luma planes of an 8-bit Y4M file as uint8 (h, w) arrays."""
    with open(path, "rb") as f:
        header = f.readline().split()
        if header[0] != b"YUV4MPEG2":
            raise SystemExit(f"{path}: not Y4M")
        params = {p[:1]: p[1:] for p in header[1:]}
        w, h = int(params[b"W"]), int(params[b"H"])
        colour = params.get(b"C", b"420jpeg")
        if not colour.startswith(b"420") or colour[3:4] == b"p":
            raise SystemExit(f"{path}: the baseline reads 8-bit 4:2:0 only")
        frame_bytes = w * h + 2 * ((w + 1) // 2) * ((h + 1) // 2)
        buf = np.empty(frame_bytes, np.uint8)
        while f.readline().startswith(b"FRAME"):
            if f.readinto(buf) != frame_bytes:
                raise SystemExit(f"{path}: truncated frame")
            yield buf[:w * h].reshape(h, w)


def baseline(ref_path, dist_path, model_paths, out_path):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sessions = []
    for path in model_paths:
        s = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        name = os.path.splitext(os.path.basename(path))[0]
        sessions.append((name, s, [i.name for i in s.get_inputs()]))
    scale = np.float32(255.0)
    cap = CAP_DB_PER_BPC[0] * 8 + CAP_DB_PER_BPC[1]
    frames = []
    for ref, dist in zip(_read_y4m_luma(ref_path), _read_y4m_luma(dist_path)):
        r = (ref.astype(np.float32) / scale)[None, None]
        d = (dist.astype(np.float32) / scale)[None, None]
        metrics = {}
        for name, s, inputs in sessions:
            feeds = {inputs[0]: d} if len(inputs) == 1 else {inputs[0]: r, inputs[1]: d}
            value = float(s.run(None, feeds)[0][0])
            metrics[name] = min(value, cap) if name == "psnr_y" else value
        frames.append({"frameNum": len(frames), "metrics": metrics})
    pooled = {name: {"mean": float(np.mean([f["metrics"][name] for f in frames]))}
              for name, _, _ in sessions}
    with open(out_path, "w") as f:
        json.dump({"frames": frames, "pooled_metrics": pooled}, f, indent=2)


# -- the benchmark ------------------------------------------------------------------

def make_clip(directory, size, frames, ffmpeg=None):
    """ref.y4m (testsrc2) and dist.y4m (its libx264 crf-40 round trip) in `directory`, made once
    and reused when present (the size and frame count are part of the caller's directory)."""
    ff = [ffmpeg or shutil.which("ffmpeg") or sys.exit("bench_score.py needs ffmpeg"), "-nostdin",
          "-v", "error", "-y"]
    ref, enc, dist = (os.path.join(directory, n) for n in ("ref.y4m", "dist.mp4", "dist.y4m"))
    if not (os.path.exists(ref) and os.path.exists(dist)):
        subprocess.run(ff + ["-f", "lavfi", "-i", f"testsrc2=size={size}:rate=25", "-frames:v",
                             str(frames), "-pix_fmt", "yuv420p", ref], check=True)
        subprocess.run(ff + ["-i", ref, "-c:v", "libx264", "-preset", "veryfast", "-crf", "40",
                             enc], check=True)
        subprocess.run(ff + ["-i", enc, "-pix_fmt", "yuv420p", dist], check=True)
    return ref, dist


# Linux gives a child the parent's peak RSS at fork as its starting ru_maxrss, so a child forked
# by this (numpy-sized) process would report at least this process's size. A bare interpreter
# forks and times the child instead, and prints its exit status, wall time, peak RSS and CPU
# seconds (user + system, all threads: on a loaded machine the steadier measure of work).
_LAUNCHER = """import os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), time.perf_counter() - t0, usage.ru_maxrss,
      usage.ru_utime + usage.ru_stime)
"""


def timed_child(cmd):
    """(wall seconds, peak RSS in MiB, CPU seconds) of one child process, which must succeed."""
    out = subprocess.run([sys.executable, "-S", "-c", _LAUNCHER] + cmd, check=True,
                         stdout=subprocess.PIPE, text=True).stdout.split()
    if int(out[0]) != 0:
        sys.exit(f"benchmark child failed ({out[0]}): {' '.join(cmd)}")
    return float(out[1]), int(out[2]) / 1024.0, float(out[3])


def pooled_means(path):
    with open(path) as f:
        return {k: v["mean"] for k, v in json.load(f)["pooled_metrics"].items()}


def compare(label, names, ref, dist, frames, rounds, tmp):
    import vmafdnn.models

    paths = [str(vmafdnn.models.path(n)) for n in names]
    cli_out, base_out = os.path.join(tmp, "cli.json"), os.path.join(tmp, "baseline.json")
    contenders = {
        "cli": [sys.executable, "-m", "vmafdnn", "-r", ref, "-d", dist, "--tiny-threads", "1",
                "-q", "-o", cli_out] + [a for n in names for a in ("--tiny-model", n)],
        "baseline": [sys.executable, os.path.abspath(__file__), "--baseline", ref, dist,
                     base_out] + paths,
    }
    best = {name: (float("inf"), 0.0) for name in contenders}
    for _ in range(rounds):
        for name, cmd in contenders.items():
            wall, rss, _ = timed_child(cmd)
            best[name] = (min(best[name][0], wall), max(best[name][1], rss))
    ours, theirs = pooled_means(cli_out), pooled_means(base_out)
    for key in theirs:
        if abs(ours[key] - theirs[key]) > 1e-4:
            sys.exit(f"{label}: pooled {key} differs: cli {ours[key]}, baseline {theirs[key]}")
    (t_cli, rss_cli), (t_base, rss_base) = best["cli"], best["baseline"]
    print(f"{label}: cli {frames / t_cli:.2f} fps ({t_cli:.2f} s, peak {rss_cli:.0f} MiB), "
          f"baseline {frames / t_base:.2f} fps ({t_base:.2f} s, peak {rss_base:.0f} MiB); "
          f"speed ratio cli/baseline {t_base / t_cli:.2f}x, "
          f"memory ratio cli/baseline {rss_cli / rss_base:.2f}x")
    print("  pooled means: " + ", ".join(f"{k} {ours[k]:.6f}" for k in sorted(ours)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", help="keep the clip here (reused when present)")
    args = parser.parse_args(argv)

    import onnxruntime

    import vmafdnn

    print(f"vmafdnn {vmafdnn.__version__} on ONNX Runtime {vmafdnn.ort_version()}; "
          f"onnxruntime (Python) {onnxruntime.__version__}; {os.cpu_count()} CPUs; "
          f"{args.frames} frames {args.size} 8-bit, best of {args.rounds}")
    with tempfile.TemporaryDirectory(prefix="vmafdnn-bench-") as tmp:
        clip_dir = args.dir or tmp
        os.makedirs(clip_dir, exist_ok=True)
        ref, dist = make_clip(clip_dir, args.size, args.frames)
        compare("FR (psnr_y, ssim_y)", ["psnr_y", "ssim_y"], ref, dist, args.frames,
                args.rounds, tmp)
        compare("FR+NR (psnr_y, ssim_y, sharpness_nr)", ["psnr_y", "ssim_y", "sharpness_nr"],
                ref, dist, args.frames, args.rounds, tmp)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--baseline":
        baseline(sys.argv[2], sys.argv[3], sys.argv[5:], sys.argv[4])
    else:
        main()
