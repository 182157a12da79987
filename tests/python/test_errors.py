"""Every error path of opening a model: the errno and the exception class."""
import errno
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import vmafdnn
from tests.models import factory


@pytest.fixture
def tmp_model(tmp_path):
    def write(name, data: bytes):
        path = tmp_path / name
        path.write_bytes(data)
        return str(path)
    return write


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        vmafdnn.Session(tmp_path / "missing.onnx")
    assert isinstance(e.value, vmafdnn.ModelNotFoundError)
    assert e.value.errno == errno.ENOENT
    assert "missing.onnx" in str(e.value)


def test_directory(tmp_path):
    with pytest.raises(vmafdnn.NotARegularFileError) as e:
        vmafdnn.Session(tmp_path)
    assert e.value.errno == errno.EISDIR and isinstance(e.value, IsADirectoryError)


def test_fifo_does_not_hang(tmp_path):
    fifo = tmp_path / "pipe.onnx"
    os.mkfifo(fifo)
    with pytest.raises(vmafdnn.NotARegularFileError, match="not a regular file"):
        vmafdnn.Session(fifo)


def test_empty_file(tmp_model):
    with pytest.raises(vmafdnn.InvalidModelError, match="is empty") as e:
        vmafdnn.Session(tmp_model("empty.onnx", b""))
    assert e.value.errno == errno.EBADMSG and isinstance(e.value, ValueError)


def test_garbage_and_truncated_files(tmp_model):
    with pytest.raises(vmafdnn.InvalidModelError) as e:
        vmafdnn.Session(tmp_model("garbage.onnx", b"\xff" * 64))
    assert e.value.errno == errno.EBADMSG
    whole = factory.conv_mean().SerializeToString()
    for cut in (1, 7, len(whole) // 2, len(whole) - 1):
        with pytest.raises(vmafdnn.DnnError) as e:
            vmafdnn.Session(tmp_model(f"cut{cut}.onnx", whole[:cut]))
        assert e.value.errno in (errno.EBADMSG,), (cut, e.value)


def test_oversized_file(tmp_path):
    big = tmp_path / "big.onnx"
    with open(big, "wb") as f:
        f.truncate((50 << 20) + 1)  # sparse: no disk used
    with pytest.raises(vmafdnn.ModelTooLargeError, match="cap") as e:
        vmafdnn.Session(big)
    assert e.value.errno == errno.E2BIG


def test_unreadable_file_as_unprivileged_user(tmp_model, tmp_path):
    path = tmp_model("secret.onnx", factory.identity().SerializeToString())
    os.chmod(path, 0o000)
    os.chmod(tmp_path, 0o755)
    code = textwrap.dedent(f"""
        import os, errno, sys
        import vmafdnn
        assert vmafdnn.available()  # load everything while still privileged:
        vmafdnn.Session             # the package imports it (and numpy) on first use
        if os.getuid() == 0:
            os.setgid(65534); os.setuid(65534)   # root reads anything: drop privileges
        try:
            vmafdnn.Session({path!r})
        except PermissionError as e:
            sys.exit(0 if e.errno == errno.EACCES else 3)
        sys.exit(4)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_custom_domain_operator_is_refused(save_model):
    from onnx import helper
    graph = helper.make_graph([helper.make_node("Exec", ["x"], ["y"], domain="com.evil")], "g",
                              [factory.tensor("x", factory.F32, [1])],
                              [factory.tensor("y", factory.F32, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.evil", 1)])
    model.ir_version = 8
    with pytest.raises(PermissionError, match="com.evil") as e:
        vmafdnn.Session(save_model(model, "evil"))
    assert e.value.errno == errno.EPERM


def test_disallowed_standard_operator_is_refused(save_model):
    from onnx import helper
    node = helper.make_node("RandomNormal", [], ["y"], shape=[1])
    graph = helper.make_graph([node], "g", [], [factory.tensor("y", factory.F32, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with pytest.raises(vmafdnn.PermissionDeniedError, match="RandomNormal") as e:
        vmafdnn.Session(save_model(model, "random"))
    assert e.value.errno == errno.EPERM


def run_isolated(code: str, **env):
    """Runs code in a fresh interpreter (ORT is loaded once per process)."""
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), **env)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_no_runtime_means_enosys_with_install_hint(models):
    done = run_isolated(f"""
        import errno, vmafdnn
        assert not vmafdnn.available()
        assert "/nonexistent/libonnxruntime.so" in vmafdnn.unavailable_reason()
        try:
            vmafdnn.Session({models.identity!r})
        except vmafdnn.RuntimeNotFoundError as e:
            assert e.errno == errno.ENOSYS and isinstance(e, ImportError)
            assert "pip install onnxruntime" in str(e), str(e)
            print("ENOSYS ok")
        else:
            raise SystemExit("opened without a runtime")
    """, VMAFDNN_ORT_LIBRARY="/nonexistent/libonnxruntime.so")
    assert "ENOSYS ok" in done.stdout


def test_not_a_runtime_library_is_named(tmp_path):
    fake = tmp_path / "libfake.so"
    fake.write_bytes(b"not an ELF file")
    done = run_isolated("""
        import vmafdnn
        assert not vmafdnn.available()
        print(vmafdnn.unavailable_reason())
    """, VMAFDNN_ORT_LIBRARY=str(fake))
    assert str(fake) in done.stdout


def test_open_does_not_print(models):
    done = run_isolated(f"""
        import numpy as np, vmafdnn
        for device in ("auto", "cuda", "openvino", "rocm"):
            with vmafdnn.Session({models.identity!r}, device=device) as s:
                s.run([np.zeros(8, np.float32)])
    """)
    assert done.stderr == "" and done.stdout == ""


def test_every_errno_maps_to_a_builtin():
    expected = {
        errno.EINVAL: ValueError, errno.ENOENT: FileNotFoundError, errno.EACCES: PermissionError,
        errno.EPERM: PermissionError, errno.EISDIR: IsADirectoryError, errno.E2BIG: ValueError,
        errno.EBADMSG: ValueError, errno.ENOTSUP: ValueError, errno.ENOSYS: ImportError,
        errno.ENOSPC: BufferError, errno.EBUSY: RuntimeError, errno.ENOMEM: MemoryError,
        errno.ERANGE: ValueError, errno.EIO: OSError,
    }
    for code, builtin in expected.items():
        err = vmafdnn.errors.error_for(code, "message")
        assert isinstance(err, vmafdnn.DnnError) and isinstance(err, builtin)
        assert err.errno == code and str(err) == "message"
    assert type(vmafdnn.errors.error_for(12345, "x")) is vmafdnn.DnnError


HEADERS = Path(__file__).resolve().parents[2] / "include" / "vmafdnn"

# The builtin each code's class must also be, where Python has a matching one.
BUILTIN_FOR = {
    errno.ENOENT: FileNotFoundError, errno.EACCES: PermissionError,
    errno.EPERM: PermissionError, errno.EISDIR: IsADirectoryError,
    errno.ENOTDIR: NotADirectoryError, errno.EEXIST: FileExistsError,
    errno.ETIMEDOUT: TimeoutError, errno.ENOMEM: MemoryError, errno.EDQUOT: MemoryError,
    errno.EINVAL: ValueError, errno.ERANGE: ValueError, errno.ENOEXEC: RuntimeError,
    errno.ENOSYS: ImportError, errno.ENOSPC: BufferError,
}


def documented_codes():
    codes = set()
    for header in HEADERS.glob("*.h"):
        codes |= set(re.findall(r"-(E[A-Z0-9]+)\b", header.read_text()))
    return sorted(codes)


def test_every_documented_code_has_its_own_exception_class():
    codes = documented_codes()
    assert {"EINVAL", "ELOOP", "ENOTDIR", "ENAMETOOLONG", "EEXIST", "ETIMEDOUT", "ECANCELED",
            "EDQUOT", "ENOEXEC"} <= set(codes)
    for name in codes:
        code = getattr(errno, name)
        err = vmafdnn.errors.error_for(code, "message")
        assert type(err) is not vmafdnn.DnnError, f"{name} maps to the bare DnnError"
        assert isinstance(err, vmafdnn.DnnError) and err.errno == code and str(err) == "message"
        assert type(err).__name__ in vmafdnn.__all__, f"{type(err).__name__} is not exported"
        assert name in (type(err).__doc__ or ""), f"{type(err).__name__} does not document {name}"
        if code in BUILTIN_FOR:
            assert isinstance(err, BUILTIN_FOR[code]), name


def test_model_runtime_faults_are_not_argument_errors():
    err = vmafdnn.errors.error_for(errno.ENOEXEC, "Gather index out of range")
    assert isinstance(err, vmafdnn.ModelRuntimeError) and not isinstance(err, ValueError)
    closed = vmafdnn.errors.error_for(errno.EBADF, "closed")
    assert isinstance(closed, vmafdnn.ClosedError) and isinstance(closed, ValueError)
