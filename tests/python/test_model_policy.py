"""The model policy: jail directory, size cap, tightened operator allow-list."""
import errno
import os
import shutil

import pytest

import vmafdnn
from tests.python.test_errors import run_isolated


@pytest.fixture
def jail(tmp_path, models):
    inside = tmp_path / "models"
    inside.mkdir()
    shutil.copy(models.identity, inside / "identity.onnx")
    (tmp_path / "models2").mkdir()  # a sibling whose name extends the jail's
    shutil.copy(models.identity, tmp_path / "models2" / "identity.onnx")
    shutil.copy(models.identity, tmp_path / "outside.onnx")
    os.symlink(tmp_path / "outside.onnx", inside / "escape.onnx")
    os.symlink("identity.onnx", inside / "alias.onnx")  # relative: stays inside
    os.symlink(inside / "identity.onnx", inside / "absolute.onnx")  # absolute: refused
    (inside / "sub").mkdir()
    os.symlink("../identity.onnx", inside / "sub" / "up.onnx")  # climbs, stays inside
    os.symlink("../models2", inside / "sibling")  # a directory outside
    os.symlink("loop2.onnx", inside / "loop1.onnx")
    os.symlink("loop1.onnx", inside / "loop2.onnx")
    (inside / "file").write_bytes(b"x")
    return inside


def test_jail_accepts_inside(jail):
    with vmafdnn.Session(jail / "identity.onnx", model_dir=jail) as s:
        assert s.attached_ep == "CPU"
    with vmafdnn.Session(jail / "alias.onnx", model_dir=jail):  # a symlink that stays inside
        pass
    with vmafdnn.Session(jail / "sub" / "up.onnx", model_dir=jail):
        pass
    # Any spelling of the jail directory: it is matched by inode, not by text.
    with vmafdnn.Session(jail / "sub" / ".." / "identity.onnx", model_dir=jail / "sub" / ".."):
        pass


@pytest.mark.parametrize("relative", ["../outside.onnx", "../models2/identity.onnx", "escape.onnx",
                                      "absolute.onnx", "sibling/identity.onnx",
                                      "sub/../../outside.onnx"])
def test_jail_refuses_outside_sibling_prefix_and_symlink_escape(jail, relative):
    with pytest.raises(PermissionError, match="outside the model directory") as e:
        vmafdnn.Session(jail / relative, model_dir=jail)
    assert e.value.errno == errno.EACCES


@pytest.mark.parametrize("relative, code", [("loop1.onnx", errno.ELOOP),
                                            ("file/identity.onnx", errno.ENOTDIR),
                                            ("missing.onnx", errno.ENOENT),
                                            ("a" * 300 + ".onnx", errno.ENAMETOOLONG),
                                            ("sub", errno.EISDIR)])
def test_jail_codes_are_precise(jail, relative, code):
    for model_dir in (jail, None):
        with pytest.raises(vmafdnn.DnnError) as e:
            vmafdnn.Session(jail / relative, model_dir=model_dir)
        assert e.value.errno == code


def test_jail_refuses_a_fifo_without_blocking(jail):
    os.mkfifo(jail / "fifo.onnx")
    with pytest.raises(IsADirectoryError) as e:
        vmafdnn.Session(jail / "fifo.onnx", model_dir=jail)
    assert e.value.errno == errno.EISDIR


def test_node_cap(models):
    """The node cap counts every node; the message gives the count and the cap."""
    vmafdnn.Session(models.conv_mean, max_nodes=3).close()
    with pytest.raises(PermissionError, match=r"model has 3 nodes .*the cap is 2") as e:
        vmafdnn.Session(models.conv_mean, max_nodes=2)
    assert e.value.errno == errno.EPERM
    for bad in (0, 100001):
        with pytest.raises(vmafdnn.InvalidArgumentError, match="max_nodes"):
            vmafdnn.Session(models.identity, max_nodes=bad)
    with pytest.raises(vmafdnn.InvalidArgumentError, match="max_subgraph_depth"):
        vmafdnn.Session(models.identity, max_subgraph_depth=9)


def test_jail_from_the_environment(jail):
    run_isolated(f"""
        import errno, vmafdnn
        vmafdnn.Session({str(jail / 'identity.onnx')!r}).close()
        try:
            vmafdnn.Session({str(jail / 'escape.onnx')!r})
        except PermissionError as e:
            assert e.errno == errno.EACCES
        else:
            raise SystemExit("escape allowed")
    """, VMAFDNN_MODEL_DIR=str(jail))


def test_size_cap_can_be_changed(models):
    size = os.path.getsize(models.identity)
    with pytest.raises(vmafdnn.ModelTooLargeError) as e:
        vmafdnn.Session(models.identity, max_model_bytes=size - 1)
    assert e.value.errno == errno.E2BIG
    vmafdnn.Session(models.identity, max_model_bytes=size).close()


def test_allow_list_can_be_tightened(models):
    vmafdnn.Session(models.identity, allowed_ops=["Identity"]).close()
    with pytest.raises(PermissionError, match="Conv") as e:
        vmafdnn.Session(models.conv_mean, allowed_ops=["Identity"])
    assert e.value.errno == errno.EPERM


def test_allow_list_cannot_be_loosened(models):
    with pytest.raises(vmafdnn.InvalidArgumentError, match="RandomNormal"):
        vmafdnn.Session(models.identity, allowed_ops=["Identity", "RandomNormal"])
    with pytest.raises(vmafdnn.InvalidArgumentError):
        vmafdnn.Session(models.identity, max_loop_nodes=1000)
