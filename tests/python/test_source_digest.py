"""vmaf_dnn_source_digest (vmafdnn.source_digest): the digest csrc/source_digest.py makes of
the sources meson lists for it, which must be every source of the library in the tree, so that a
change to any of them gives a rebuilt library another digest (the batch job key reads it)."""
import glob
import importlib.util
import os
import re

import vmafdnn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def digest_of(paths, tmp_path, root=ROOT):
    spec = importlib.util.spec_from_file_location(
        "source_digest", os.path.join(ROOT, "csrc", "source_digest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "digest.c"
    module.main(str(out), str(root), paths)
    return re.search(r'"([0-9a-f]{16})"', out.read_text()).group(1)


def library_sources():
    patterns = ["csrc/*.c", "csrc/*.h", "csrc/gpu/*.c", "csrc/gpu/*.h", "include/vmafdnn/*.h",
                "csrc/source_digest.py"]
    return sorted(p for pattern in patterns for p in glob.glob(os.path.join(ROOT, pattern)))


def test_the_digest_covers_every_source_of_the_library(tmp_path):
    # Recomputed over every C file and header in the tree: a file meson does not hand the
    # script (a header added without its line in csrc/meson.build) gives another digest.
    assert re.fullmatch(r"[0-9a-f]{16}", vmafdnn.source_digest())
    assert digest_of(library_sources(), tmp_path) == vmafdnn.source_digest()


def test_the_digest_changes_with_any_source_and_not_with_the_checkout(tmp_path):
    sources = library_sources()
    base = digest_of(sources, tmp_path)
    tree = tmp_path / "tree"
    moved = []
    for path in sources:  # the same files in another checkout: the same digest
        target = tree / os.path.relpath(path, ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(open(path, "rb").read())
        moved.append(str(target))
    assert digest_of(moved, tmp_path, tree) == base
    psnr = tree / "csrc" / "psnr_kernel.c"
    os.rename(psnr, tree / "csrc" / "psnr_kernel2.c")  # a file renamed, its bytes kept
    renamed = [p.replace("psnr_kernel.c", "psnr_kernel2.c") for p in moved]
    assert digest_of(renamed, tmp_path, tree) != base
    os.rename(tree / "csrc" / "psnr_kernel2.c", psnr)
    psnr.write_bytes(psnr.read_bytes() + b"\n")  # one byte more
    assert digest_of(moved, tmp_path, tree) != base
    psnr.write_bytes(psnr.read_bytes()[:-1])
    assert digest_of(moved, tmp_path, tree) == base
