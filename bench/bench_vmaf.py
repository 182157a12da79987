"""VMAF throughput: the ONNX graphs of tools/gen_vmaf_models.py on ONNX Runtime against libvmaf.

Usage: python bench/bench_vmaf.py [--size 1920x1080] [--frames 20] [--threads 1]

Both sides are timed as whole processes on the same y4m pair (testsrc2 and its x264 crf 30
encode, generated once into a temporary directory), decoding included:
  libvmaf  the static FFmpeg 9.0.2 (tools/fetch_vmaf_reference.sh) with
           libvmaf=model=version=vmaf_v0.6.1:n_threads=N;
  graphs   a Python process reading the y4m luma, running vmaf_features.onnx per frame and
           vmaf_v0.6.1.onnx per frame on the CPU provider with N intra-op threads (spinning off),
           motion2 by the driver of tests/python/test_vmaf_graphs.py.
Prints fps of each and the ratio graphs / libvmaf.
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
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
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
        t_lib, _ = timed([ff, "-hide_banner", "-loglevel", "error", "-i", dist, "-i", ref,
                          "-lavfi", f"[0:v][1:v]libvmaf=model=version=vmaf_v0.6.1:log_fmt=json:"
                                    f"log_path={log}:n_threads={args.threads}",
                          "-f", "null", "-"])
        code = GRAPHS_PROCESS.format(tests=os.path.join(ROOT, "tests", "python"), ref=ref,
                                     dist=dist, models=models, threads=args.threads)
        t_onnx, out = timed([sys.executable, "-c", code])

    fps_lib, fps_onnx = args.frames / t_lib, args.frames / t_onnx
    print(f"{args.size}, {args.frames} frames, {args.threads} thread(s), whole processes")
    print(f"libvmaf vmaf_v0.6.1 : {fps_lib:7.2f} fps ({t_lib:.2f} s)")
    print(f"ONNX graphs (ORT)   : {fps_onnx:7.2f} fps ({t_onnx:.2f} s), mean VMAF {float(out):.4f}")
    print(f"ratio graphs/libvmaf: {fps_onnx / fps_lib:.3f}")


if __name__ == "__main__":
    main()
