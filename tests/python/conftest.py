"""Shared fixtures: the test models, generated once per test session."""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.models.factory

from tests.models import factory  # noqa: E402


class Models:
    """Attribute access to the generated model paths: models.identity, ..."""

    def __init__(self, directory: Path):
        self.dir = directory

    def __getattr__(self, name: str) -> str:
        path = self.dir / f"{name}.onnx"
        if not path.exists():
            raise AttributeError(name)
        return str(path)


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> Models:
    directory = tmp_path_factory.mktemp("models")
    factory.write_all(str(directory))
    return Models(directory)


@pytest.fixture(scope="session")
def save_model(tmp_path_factory):
    """save_model(onnx_model, name) -> path of a model saved for this test run."""
    directory = tmp_path_factory.mktemp("extra-models")

    def save(model, name: str) -> str:
        import onnx

        path = directory / f"{name}.onnx"
        onnx.save(model, str(path))
        return str(path)

    return save


def pytest_report_header(config):
    import vmafdnn

    if vmafdnn.available():
        return f"vmafdnn {vmafdnn.__version__}, ONNX Runtime {vmafdnn.ort_version()} ({vmafdnn.ort_library_path()})"
    return f"vmafdnn {vmafdnn.__version__}, ONNX Runtime unavailable: {vmafdnn.unavailable_reason()}"


os.environ.setdefault("OMP_NUM_THREADS", "1")
