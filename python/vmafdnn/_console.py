"""The ``vmafdnn`` console script and ``python -m vmafdnn``: the process is set
up before the command line tool imports numpy. Importing this module changes
nothing; :func:`main` does, as it starts the tool."""
import gc
import os


def main():
    # The tool does no linear algebra worth a thread pool, and OpenBLAS
    # (numpy's BLAS) starts one thread per core as numpy is imported, each
    # spinning for about 0.1 s of CPU time beside the frame workers
    # (measured: 0.17 s of CPU for `import numpy` on 2 cores, 0.08 s with
    # one BLAS thread). A value the caller set stays. Set here, not when the
    # module is imported: a program that imports every module of the package
    # (pydoc, a doc builder) keeps its environment.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from .cli import main as cli_main
    # The modules just imported (numpy, the tool's own) live as long as the
    # process: kept out of the collector's passes, which the per-frame
    # objects keep starting (0.7% of a 1080p VMAF run's profile).
    gc.freeze()
    return cli_main()
