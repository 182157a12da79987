"""Decode throughput at 1080p: containers through PyAV (vmafdnn.media) against
reading Y4M (vmafdnn.video.Y4MReader), and whether decoding ahead in a
thread (the reader's prefetch) speeds up scoring.

    python bench/bench_decode.py [--frames 60] [--size 1920x1080] [--rounds 3] [--dir DIR]

Clips: FFmpeg's testsrc2 (8-bit 4:2:0, 25 fps) as Y4M and as libx264 (crf 23,
preset medium) in mp4, made with PyAV. Contenders read every frame and touch
its luma (one sample per row, so lazily mapped pages count), in alternation,
best round of each (the machines are shared and noisy):

  y4m           Y4MReader on the .y4m (one readinto per frame)
  pyav-y4m      MediaReader on the same .y4m (FFmpeg's Y4M demuxer)
  pyav-h264     MediaReader on the .mp4 (H.264 decode, FFmpeg's threads)

Then scoring the .mp4 pair (psnr_y, one ORT thread) with prefetch 0 (the
default: decode in the scoring thread, FFmpeg's frame threads ahead of it)
and 3 (a reader thread decoding ahead) shows what that thread buys.
Prints frames/s and the ratios.
"""
import argparse
import os
import sys
import tempfile


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_times  # noqa: E402


def make_clips(directory, width, height, frames):
    import av

    from vmafdnn import media, video

    y4m, mp4 = os.path.join(directory, "ref.y4m"), os.path.join(directory, "ref.mp4")
    if os.path.exists(y4m) and os.path.exists(mp4):
        return y4m, mp4
    graph = av.filter.Graph()
    src = graph.add("testsrc2", f"size={width}x{height}:rate=25")
    fmt = graph.add("format", "yuv420p")
    sink = graph.add("buffersink")
    src.link_to(fmt)
    fmt.link_to(sink)
    graph.configure()
    pictures = []
    for i in range(frames):
        vf = sink.pull()
        pictures.append(media._frame_from_av(vf, i))
    video.write_y4m(y4m, pictures, fps=25)
    with av.open(mp4, "w") as out:
        stream = out.add_stream("libx264", rate=25, options={"crf": "23", "preset": "medium"})
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for frame in pictures:
            for packet in stream.encode(media._to_av_frame(av, frame)):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return y4m, mp4


def read_all(open_reader):
    def run():
        n = 0
        with open_reader() as reader:
            for frame in reader:
                int(frame.y[:, 0].sum())  # touch every row
                n += 1
        return n
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", help="keep the clips here (default: a temporary directory)")
    args = parser.parse_args()
    width, height = map(int, args.size.split("x"))

    import vmafdnn
    from vmafdnn import media, video

    with tempfile.TemporaryDirectory() as tmp:
        directory = args.dir or tmp
        os.makedirs(directory, exist_ok=True)
        y4m, mp4 = make_clips(directory, width, height, args.frames)
        contenders = {
            "y4m": read_all(lambda: video.Y4MReader(y4m)),
            "pyav-y4m": read_all(lambda: media.MediaReader(y4m)),
            "pyav-h264": read_all(lambda: media.MediaReader(mp4)),
        }
        for name, fn in contenders.items():
            assert fn() == args.frames, name
        best = best_times(contenders, rounds=args.rounds)
        fps = {name: args.frames / t for name, t in best.items()}
        print(f"decode, {width}x{height}, {args.frames} frames, best of {args.rounds}:")
        for name, rate in fps.items():
            print(f"  {name:<10} {rate:8.1f} frames/s")
        print(f"  ratio pyav-h264 / y4m: {fps['pyav-h264'] / fps['y4m']:.3f}")
        print(f"  ratio pyav-y4m / y4m:  {fps['pyav-y4m'] / fps['y4m']:.3f}")

        if not vmafdnn.available():
            print("scoring: skipped, ONNX Runtime is not installed")
            return 0
        real_open = video.open_video

        def score_with(prefetch):
            def run():
                def opener(*a, **k):
                    return real_open(*a, **k, prefetch=prefetch)
                video.open_video, saved = opener, video.open_video
                import vmafdnn.scoring as scoring
                scoring.open_video, saved_s = opener, scoring.open_video
                try:
                    vmafdnn.score(mp4, mp4, models=["psnr_y"], threads=1)
                finally:
                    video.open_video, scoring.open_video = saved, saved_s
            return run

        timed = best_times({"prefetch 0": score_with(0), "prefetch 3": score_with(3)},
                           rounds=args.rounds)
        print(f"score mp4 pair (psnr_y, 1 ORT thread), {args.frames} frames:")
        for name, t in timed.items():
            print(f"  {name:<10} {args.frames / t:8.1f} frames/s")
        print(f"  ratio prefetch 3 / prefetch 0: {timed['prefetch 0'] / timed['prefetch 3']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
