"""Attacks on the pictures a context's models keep in the session's host-accessible memory
(vdnn_ort_host_alloc, VmafDnnStaticRuns.pinned). VMAFDNN_TEST_HOST_ACCESSIBLE=1 stands ORT's
CPU allocator in for the EP device's pinned memory, so the blocks' path runs on ORT's CPU EP."""
import json
import os
import subprocess
import sys
import textwrap

from onnx import TensorProto, helper


def save_huge_resized_model(path, side=32768) -> None:
    """d = mean(reference - distorted) over [1, 1, side, side] pictures, which every frame is
    resized to (sidecar "resize"): one fp32 plane of the library's is 4 GiB at 32768."""
    import onnx
    pictures = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 1, side, side])
                for n in ("reference", "distorted")]
    out = helper.make_tensor_value_info("d", TensorProto.FLOAT, [1])
    nodes = [helper.make_node("Sub", ["reference", "distorted"], ["e"]),
             helper.make_node("ReduceMean", ["e"], ["d"], axes=[1, 2, 3], keepdims=0)]
    model = helper.make_model(helper.make_graph(nodes, "huge", pictures, [out]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    path.with_suffix(".json").write_text(json.dumps({"kind": "fr", "output_keys": ["d"],
                                                      "resize": "bilinear"}))


def run_child(script: str, hook: str, tmp_path) -> subprocess.CompletedProcess:
    # (not under tools/sanitize.sh's ASan run: ASan's operator new aborts where memory runs
    # out, by design, so ORT could not throw std::bad_alloc there)
    env = dict(os.environ, VMAFDNN_TEST_HOST_ACCESSIBLE=hook)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env,
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=300)


def test_a_plane_the_host_allocator_cannot_give_fails_the_frame_not_the_process(tmp_path):
    """ORT's allocators throw C++ exceptions when they run out (std::bad_alloc from the CPU
    allocator; CUDA's pinned allocator throws too). vdnn_ort_host_alloc called the allocator's
    Alloc from C, so the exception unwound through the library and terminated the process
    (SIGABRT) instead of falling back to malloc, whose failure is an OutOfMemoryError for
    the frame. The address space is capped 2 GiB above what the context uses, and the model
    wants 4 GiB planes: the frame fails, the process lives, with and without the hook."""
    path = tmp_path / "huge.onnx"
    save_huge_resized_model(path)
    script = f"""
        import resource
        import numpy as np
        import vmafdnn

        def vm_bytes():
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmSize:"):
                        return int(line.split()[1]) * 1024

        picture = np.zeros((16, 16), np.uint8)
        with vmafdnn.Context(threads=1, max_memory_bytes=1 << 40) as ctx:
            ctx.use_model({str(path)!r})
            resource.setrlimit(resource.RLIMIT_AS, (vm_bytes() + (2 << 30), resource.RLIM_INFINITY))
            try:
                ctx.read_pictures(picture, picture, 0)
                ctx.flush()
                print("scored")
            except vmafdnn.OutOfMemoryError as e:
                print("out of memory:", e)
        print("alive")
    """
    for hook in ("0", "1"):
        child = run_child(script, hook, tmp_path)
        assert child.returncode == 0, (hook, child.returncode, child.stderr[-2000:])
        assert "out of memory:" in child.stdout and "alive" in child.stdout, (hook, child.stdout)
