"""Built-in quality models shipped with vmafdnn.

The .onnx files and their .json sidecars are not in the source tree: tools/gen_builtin_models.py
generates them at build time and the build installs them into this package directory.
"""

import importlib.resources
import pathlib

MODEL_NAMES = ("psnr_y", "ssim_y", "sharpness_nr")


def builtin_model_dir():
    """Directory the generated built-in models are installed into."""
    return pathlib.Path(str(importlib.resources.files(__package__)))


def path(name):
    """Path of the built-in model `name` (its sidecar is the same path with .json)."""
    if name not in MODEL_NAMES:
        raise ValueError(f"unknown built-in model {name!r}; built-in models are "
                         f"{', '.join(MODEL_NAMES)}")
    model = builtin_model_dir() / f"{name}.onnx"
    if not model.is_file():
        raise FileNotFoundError(
            f"built-in model {name!r} is missing: {model} does not exist. The models are "
            f"generated at build time; rebuild the package, or run "
            f"'python tools/gen_builtin_models.py {builtin_model_dir()}' from the source tree.")
    return model
