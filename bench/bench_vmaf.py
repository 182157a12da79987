"""VMAF throughput: the ONNX graphs of tools/gen_vmaf_models.py on ONNX Runtime against libvmaf.

Usage: python bench/bench_vmaf.py [--size 1920x1080] [--frames 20] [--threads 1] [--repeat 3]
                                  [--models DIR ...]

Both sides are timed as whole processes on the same y4m pair (testsrc2 and its x264 crf 30
encode, generated once into a temporary directory), decoding included:
  libvmaf  the static FFmpeg 9.0.2 (tools/fetch_vmaf_reference.sh) with
           libvmaf=model=version=vmaf_v0.6.1:n_threads=N;
  graphs   a Python process reading the y4m luma, running vmaf_features.onnx per frame and
           vmaf_v0.6.1.onnx per frame on the CPU provider with N intra-op threads (spinning off),
           motion2 by the driver of tests/python/test_vmaf_graphs.py.
The contenders run interleaved --repeat times (the machine is shared: medians, and the spread
as noise); --models runs the graphs of further directories (say an older generator's output)
beside the fresh ones. Prints median fps, the min-max range, peak RSS (per process, from wait4)
and the ratio graphs / libvmaf.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import test_vmaf_graphs as T  # noqa: E402

GRAPHS_PROCESS = """
import sys
sys.path.insert(0, {tests!r})
import test_vmaf_graphs as T
refs, bpc = T.read_y4m_luma({ref!r})
dists, _ = T.read_y4m_luma({dist!r})
out = T.VmafGraphs({models!r}, threads={threads}).score(refs, dists, bpc)
print(float(out["vmaf"].mean()))
"""


def timed(cmd):
    """Wall seconds, CPU seconds, peak RSS (MiB) and stdout of one whole process (waited for
    with wait4, which gives that process's own CPU time and peak RSS)."""
    with tempfile.TemporaryFile("w+") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        dt = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            raise RuntimeError(f"{cmd[:3]} exited with {proc.returncode}")
        out.seek(0)
        return dt, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, out.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--models", action="append", default=[],
                    help="a further directory of generated graphs to time beside fresh ones")
    args = ap.parse_args()

    ref_tools = T.fetch_reference()
    ff = ref_tools["FFMPEG"]
    with tempfile.TemporaryDirectory() as tmp:
        models = os.path.join(tmp, "models")
        T.generate_models(models, ref_tools["VMAF_MODELS"])
        ref, dist = os.path.join(tmp, "ref.y4m"), os.path.join(tmp, "dist.y4m")
        q = [ff, "-hide_banner", "-loglevel", "error", "-y"]
        subprocess.run(q + ["-f", "lavfi", "-i", f"testsrc2=size={args.size}:rate=25",
                            "-frames:v", str(args.frames), "-pix_fmt", "yuv420p", ref], check=True)
        mp4 = os.path.join(tmp, "d.mp4")
        subprocess.run(q + ["-i", ref, "-c:v", "libx264", "-crf", "30", mp4], check=True)
        subprocess.run(q + ["-i", mp4, "-pix_fmt", "yuv420p", dist], check=True)

        log = os.path.join(tmp, "log.json")
        contenders = {"libvmaf vmaf_v0.6.1": [
            ff, "-hide_banner", "-loglevel", "error", "-i", dist, "-i", ref, "-lavfi",
            f"[0:v][1:v]libvmaf=model=version=vmaf_v0.6.1:log_fmt=json:log_path={log}:"
            f"n_threads={args.threads}", "-f", "null", "-"]}
        for label, mdir in [("ONNX graphs (ORT)", models)] + [(d, d) for d in args.models]:
            code = GRAPHS_PROCESS.format(tests=os.path.join(ROOT, "tests", "python"), ref=ref,
                                         dist=dist, models=mdir, threads=args.threads)
            contenders[label] = [sys.executable, "-c", code]
        runs = {k: [] for k in contenders}
        for _ in range(args.repeat):
            for name, cmd in contenders.items():
                runs[name].append(timed(cmd))

    print(f"{args.size}, {args.frames} frames, {args.threads} thread(s), whole processes, "
          f"median of {args.repeat} interleaved runs [min-max]; fps by wall time, and by the "
          f"process's CPU time (steadier where other jobs share the cores)")
    fps, cfps = {}, {}
    for name, rs in runs.items():
        f = sorted(args.frames / r[0] for r in rs)
        c = sorted(args.frames / r[1] for r in rs)
        fps[name], cfps[name] = f[len(f) // 2], c[len(c) // 2]
        rss = max(r[2] for r in rs)
        extra = "" if name.startswith("libvmaf") else f", mean VMAF {float(rs[0][3]):.4f}"
        print(f"{name:22s}: {fps[name]:6.2f} fps [{f[0]:.2f}-{f[-1]:.2f}], CPU {cfps[name]:6.2f} "
              f"fps [{c[0]:.2f}-{c[-1]:.2f}], peak RSS {rss:5.0f} MiB{extra}")
    lib = "libvmaf vmaf_v0.6.1"
    for name in fps:
        if name != lib:
            print(f"ratio {name} / libvmaf: {fps[name] / fps[lib]:.3f} (wall), "
                  f"{cfps[name] / cfps[lib]:.3f} (CPU)")

if __name__ == "__main__":
    main()
