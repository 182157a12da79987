"""Fuzz harness for python/vmafdnn/video.py: Y4MReader, RawYUVReader, open_video.

Run by tools/fuzz.sh. With atheris installed this is a coverage-guided
libFuzzer run and takes libFuzzer's arguments:

    python tests/fuzz/fuzz_y4m.py CORPUS_DIR -max_total_time=60 -print_final_stats=1
    python tests/fuzz/fuzz_y4m.py crash-file            # replay one input

Without atheris (``--no-atheris``, or when it cannot be imported) a plain
random-mutation loop runs instead: no coverage guidance, same harness, same
arguments (CORPUS_DIR..., -max_total_time=, -artifact_prefix=, -seed=, -dict=
whose entries it splices in), no timeout or memory limit, and it prints
libFuzzer's "Done N runs in S second(s)" line.

The readers are imported as ``vmafdnn.video`` (they use the native module for
the plane checks), so the package must be importable: tools/fuzz.sh installs
it editable into the fuzz environment. Only vmafdnn.video and vmafdnn.frames
(its Frame, VideoFormatError and layout names) are instrumented.

Input: 5 header bytes, then the stream.
  byte 0  mode: bits 0-1 pick the reader: 0 Y4MReader over BytesIO, 1 Y4MReader
          over a read()-only object returning 1..7 bytes per call (no readinto,
          readline or peek), 2 open_video(), 3 RawYUVReader; bit 2 reuse_buffer;
          bit 3 open_video gets the raw geometry below; bit 4 the stream is a
          BufferedReader over short reads (a pipe) instead of BytesIO; bit 5
          the stream is written to a file in $TMPDIR whose path is passed
          instead (the reader opens and owns it), named *.y4m when bit 6 is
          set, *.yuv otherwise
  byte 1  width (255: 40000, out of range)
  byte 2  height (255: 40000)
  byte 3  pix_fmt: PIX_FMTS[byte % len(PIX_FMTS)]
  byte 4  bit depth (0: None)

Findings: any exception but VideoFormatError (and, from open_video and
RawYUVReader, ValueError about the caller's arguments) is a bug; so is a frame whose
shape, dtype, index or sample range disagrees with the reader's header, a
VideoFormatError with an empty message, or a file that video.py opened and
left open once its reader was closed or failed to open.
"""

import builtins
import io
import os
import random
import sys
import tempfile
import time
import zlib

USE_ATHERIS = "--no-atheris" not in sys.argv
if USE_ATHERIS:
    try:
        import atheris
    except ImportError:
        USE_ATHERIS = False
if USE_ATHERIS:
    with atheris.instrument_imports(include=["vmafdnn.video", "vmafdnn.frames"]):
        from vmafdnn import video
else:
    from vmafdnn import video

import numpy as np  # noqa: E402  (after video: only video is instrumented)

PIX_FMTS = ["420", "422", "444", "400", "yuv420p", "yuv420p10le", "gray", "gray12",
            "yuv444p16", "yuv422p9", "mono", "yuv420p10be", "nv12", "444p"]
MAX_FRAMES = 64
INPUT_DIR = tempfile.mkdtemp(prefix="fuzz_y4m-")  # tools/fuzz.sh points TMPDIR at its work dir
CHROMA_DIVISORS = {"420": (2, 2), "422": (1, 2), "444": (1, 1)}


class Finding(AssertionError):
    """The reader broke its contract (not just an unexpected exception)."""


class Trickle:
    """A read()-only stream that hands out 1..7 bytes per call."""

    def __init__(self, data: bytes):
        self._data, self._pos, self._step = data, 0, 0

    def read(self, n=-1):
        self._step = self._step % 7 + 1
        if n is None or n < 0:
            n = len(self._data)
        chunk = self._data[self._pos:self._pos + min(n, self._step)]
        self._pos += len(chunk)
        return chunk


class ShortReads(io.RawIOBase):
    """A raw stream that returns at most 5 bytes per readinto, like a pipe."""

    def __init__(self, data: bytes):
        self._data, self._pos = data, 0

    def readable(self):
        return True

    def readinto(self, b):
        n = min(len(b), 5, len(self._data) - self._pos)
        b[:n] = self._data[self._pos:self._pos + n]
        self._pos += n
        return n


# Every file video.py opens, so the harness can check that each was closed.
opened_files = []


def tracking_open(*args, **kwargs):
    f = builtins.open(*args, **kwargs)  # noqa: SIM115 (the caller owns it)
    opened_files.append(f)
    return f


video.open = tracking_open  # shadows the builtin inside video.py only


def make_stream(mode: int, data: bytes):
    if mode & 32:
        path = os.path.join(INPUT_DIR, "input.y4m" if mode & 64 else "input.yuv")
        with builtins.open(path, "wb") as f:
            f.write(data)
        return path
    if mode & 3 == 1:
        return Trickle(data)
    if mode & 16:
        return io.BufferedReader(ShortReads(data), buffer_size=16)
    return io.BytesIO(data)


def check_frame(reader, frame, index: int) -> None:
    if not isinstance(frame, video.Frame) or frame.index != index:
        raise Finding(f"frame {index}: wrong type or index: {frame!r}")
    if reader.frames_read != index + 1:
        raise Finding(f"frame {index}: frames_read is {reader.frames_read}")
    w, h, depth = reader.width, reader.height, reader.bitdepth
    if (frame.width, frame.height, frame.bitdepth, frame.chroma) != (w, h, depth, reader.chroma):
        raise Finding(f"frame {index}: {frame!r} differs from the reader's header")
    dtype = np.uint8 if depth == 8 else np.uint16
    if reader.chroma == "400":
        shapes = [(h, w)]
        if frame.u is not None or frame.v is not None:
            raise Finding(f"frame {index}: monochrome frame has chroma planes")
    else:
        dy, dx = CHROMA_DIVISORS[reader.chroma]
        shapes = [(h, w)] + [(-(-h // dy), -(-w // dx))] * 2
    planes = frame.planes()
    if [p.shape for p in planes] != shapes or any(p.dtype != dtype for p in planes):
        raise Finding(f"frame {index}: planes {[(p.shape, p.dtype) for p in planes]}, "
                      f"expected {shapes} of {np.dtype(dtype)}")
    if sum(p.nbytes for p in planes) != reader.frame_bytes:
        raise Finding(f"frame {index}: planes do not add up to frame_bytes")
    for p in planes:
        if p.size and int(p.max()) >= 1 << depth:
            raise Finding(f"frame {index}: sample {int(p.max())} above {depth} bits")


def open_reader(data: bytes):
    """Returns the reader, or None when construction was refused as documented."""
    mode = data[0] if data else 0
    geometry = [data[i] if len(data) > i else 0 for i in range(1, 5)]
    width, height = (40000 if b == 255 else b for b in geometry[:2])
    pix_fmt = PIX_FMTS[geometry[2] % len(PIX_FMTS)]
    bitdepth = geometry[3] or None
    stream = make_stream(mode, data[5:])
    reuse = bool(mode & 4)
    kind = mode & 3
    try:
        if kind in (0, 1):
            return video.Y4MReader(stream, reuse_buffer=reuse)
        if kind == 2:
            if mode & 8:
                return video.open_video(stream, width, height, pix_fmt, bitdepth,
                                        reuse_buffer=reuse)
            return video.open_video(stream, reuse_buffer=reuse)
        return video.RawYUVReader(stream, width, height, pix_fmt, bitdepth, reuse_buffer=reuse)
    except video.VideoFormatError as e:
        if not str(e):
            raise Finding("VideoFormatError without a message") from e
        return None
    except ValueError:
        # Plain ValueError is for the caller's arguments: raw geometry that is
        # wrong, missing (open_video on a stream that is not Y4M) or at odds
        # with a Y4M header. The Y4M reader alone never raises it.
        if kind in (2, 3):
            return None
        raise


def test_one_input(data: bytes) -> None:
    try:
        read_all(data)
    finally:
        left_open = [f for f in opened_files if not f.closed]
        for f in opened_files:
            f.close()
        opened_files.clear()
    if left_open:
        raise Finding(f"video.py left {len(left_open)} file(s) open: {left_open}")


def read_all(data: bytes) -> None:
    reader = open_reader(data)
    if reader is None:
        return
    try:
        for index in range(MAX_FRAMES):
            frame = reader.read_frame()
            if frame is None:
                break
            check_frame(reader, frame, index)
    except video.VideoFormatError as e:
        if not str(e):
            raise Finding("VideoFormatError without a message") from e
    finally:
        reader.close()


# ---- fallback: random mutation without coverage ---------------------------------------------

def read_dict(path: str) -> list:
    """The quoted entries of a libFuzzer dictionary file (\\, \\" and \\xNN escapes)."""
    tokens = []
    with open(path, "rb") as f:
        for line in f:
            line = line.strip()
            if not line.startswith(b'"') or not line.endswith(b'"') or len(line) < 2:
                continue
            body, out, i = line[1:-1], bytearray(), 0
            while i < len(body):
                if body[i:i + 2] == b"\\x":
                    out.append(int(body[i + 2:i + 4], 16))
                    i += 4
                elif body[i:i + 1] == b"\\":
                    out += body[i + 1:i + 2]
                    i += 2
                else:
                    out += body[i:i + 1]
                    i += 1
            tokens.append(bytes(out))
    return tokens


def mutate(rng: random.Random, data: bytes, corpus: list, tokens: list) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        at = rng.randint(0, len(b))
        if op == 0 and b:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        elif op == 1 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 2:
            b[at:at] = rng.choice(tokens)
        elif op == 3 and b:
            del b[at:at + rng.randint(1, 8)]
        elif op == 4:
            other = rng.choice(corpus)
            start = rng.randint(0, len(other))
            b[at:] = other[start:start + rng.randint(0, 64)]
        else:
            b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
    return bytes(b)


def run_fallback(argv: list) -> int:
    options = {a[1:].split("=", 1)[0]: a.split("=", 1)[1] for a in argv
               if a.startswith("-") and "=" in a}
    paths = [a for a in argv if not a.startswith("-")]
    files = [p for p in paths if os.path.isfile(p)]
    prefix = options.get("artifact_prefix", "./")
    print("fuzz_y4m: atheris not available: random mutation without coverage guidance",
          file=sys.stderr)
    if files:  # replay
        for path in files:
            with open(path, "rb") as f:
                test_one_input(f.read())
        print(f"Done {len(files)} runs in 0 second(s)", file=sys.stderr)
        return 0
    corpus = []
    for d in paths:
        for name in sorted(os.listdir(d)):
            with open(os.path.join(d, name), "rb") as f:
                corpus.append(f.read())
    corpus = corpus or [b"\x00" * 5]
    tokens = read_dict(options["dict"]) if "dict" in options else [b"\n"]
    rng = random.Random(int(options.get("seed", "1")))
    budget = float(options.get("max_total_time", "60"))
    start, runs = time.monotonic(), 0
    for data in corpus:
        test_one_input(data)
        runs += 1
    while time.monotonic() - start < budget:
        data = mutate(rng, rng.choice(corpus), corpus, tokens)
        try:
            test_one_input(data)
        except BaseException:
            name = f"{prefix}crash-{zlib.crc32(data):08x}"
            with open(name, "wb") as f:
                f.write(data)
            print(f"==fuzz_y4m== uncaught exception; input saved to {name}", file=sys.stderr)
            raise
        runs += 1
    elapsed = int(time.monotonic() - start)
    print(f"Done {runs} runs in {elapsed} second(s)", file=sys.stderr)
    print(f"stat::number_of_executed_units: {runs}", file=sys.stderr)
    return 0


def main() -> int:
    argv = [a for a in sys.argv if a != "--no-atheris"]
    if not USE_ATHERIS:
        return run_fallback(argv[1:])
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
