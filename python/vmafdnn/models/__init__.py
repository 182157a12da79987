"""Built-in quality models shipped with vmafdnn.

The .onnx files and their .json sidecars are not in the source tree: tools/gen_builtin_models.py
generates them at build time and the build installs them into this package directory.
"""

import importlib.resources
import pathlib

MODEL_NAMES = ("psnr_y", "ssim_y", "sharpness_nr")


def path(name):
    """Path of the built-in model `name` (its sidecar is the same path with .json).

    Resolved file by file: in an editable install the generated models live in
    the build directory, not beside this file."""
    if name not in MODEL_NAMES:
        raise ValueError(f"unknown built-in model {name!r}; built-in models are "
                         f"{', '.join(MODEL_NAMES)}")
    model = importlib.resources.files(__package__) / f"{name}.onnx"
    if not model.is_file():
        raise FileNotFoundError(
            f"built-in model {name!r} is missing ({model}). The models are generated at "
            f"build time: rebuild the package, or run 'python tools/gen_builtin_models.py "
            f"DIR' from the source tree.")
    return pathlib.Path(str(model))
