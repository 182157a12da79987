"""The vmafdnn command line tool with every frame copied as before
vmaf_dnn_read_pictures_kept: Context.read_pictures ignores ``keep``, so frames
in flight and past pictures are copied into the library's slots. A contender
for bench_throughput.py's --cli, beside the tool itself:

    python bench/bench_throughput.py --only vmafdnn --threads 1,2 \\
        --cli "kept=python -m vmafdnn" --cli "copied=python bench/cli_copied_pictures.py"
"""
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the tool's own entry point

from vmafdnn import _console, context  # noqa: E402

_read_pictures = context.Context.read_pictures


def _copied(self, reference, distorted, index, bitdepth=None, *, keep=False, released=None):
    _read_pictures(self, reference, distorted, index, bitdepth)
    if released is not None:
        released()


context.Context.read_pictures = _copied

if __name__ == "__main__":
    sys.exit(_console.main())
