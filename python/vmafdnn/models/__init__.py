"""The catalog of models: built-in ones and any others on the search path.

The catalog, the name rules and the default model sets belong to the C
library (include/vmafdnn/catalog.h); this module only translates them. A
model name is a file name without ``.onnx`` (``"psnr_y"``); a string with a
``/`` or ending in ``.onnx`` is a path. Names are looked up in the
directories of ``VMAFDNN_MODEL_PATH``, then the library's data directory
(this package's ``models/`` in a wheel), then the directories added with
:func:`add_path`.

The built-in .onnx files and their .json sidecars are not in the source tree:
tools/gen_builtin_models.py generates them at build time (models/meson.build)
and the build installs them into this package directory.
"""

import importlib.resources
import json
import os
import pathlib
import stat
from typing import List, NamedTuple, Optional, Tuple

from .._native import c_path, check, decode_name, ffi, lib

__all__ = ["MODEL_NAMES", "ModelEntry", "add_path", "catalog", "default_models", "describe",
           "is_path", "path", "resolve", "search_path"]


def _text(cdata) -> str:
    return ffi.string(cdata).decode("utf-8", "replace") if cdata != ffi.NULL else ""


def _package_dirs() -> List[str]:
    """Where this package's models really are. Usually the library's own data
    directory; in an editable install they live in the build directory, so
    they are found file by file and their directory added to the search
    path."""
    dirs = []
    for item in importlib.resources.files(__package__).iterdir():
        if item.name.endswith(".onnx"):
            folder = os.path.dirname(str(item))
            if folder not in dirs:
                dirs.append(folder)
    return dirs


def add_path(directory) -> None:
    """Appends `directory` to the search path (vmaf_dnn_model_path_add): for
    the life of the process and every front end in it."""
    check(lib.vmaf_dnn_model_path_add(c_path(directory, "model directory")))


def search_path() -> List[str]:
    """The directories names are looked up in, in order."""
    buf = ffi.new("char[]", 65536)
    check(lib.vmaf_dnn_model_search_path(buf, len(buf)))
    return [d for d in os.fsdecode(ffi.string(buf)).split(":") if d]


_PACKAGE_DIRS = _package_dirs()
for _folder in _PACKAGE_DIRS:
    # In a wheel the library finds this directory itself; elsewhere (an
    # editable install) only this tells it.
    if os.path.realpath(_folder) not in map(os.path.realpath, search_path()):
        add_path(_folder)

#: Names of the models shipped with this package.
MODEL_NAMES = tuple(sorted({entry[:-len(".onnx")] for folder in _PACKAGE_DIRS
                            for entry in os.listdir(folder) if entry.endswith(".onnx")}))


class ModelEntry(NamedTuple):
    """One model as its files describe it (VmafDnnCatalogEntry)."""

    name: str
    path: str
    # "fr", "nr", "features" (the C catalog's; "features" also when every input the
    # sidecar binds reads another model's feature, see _reads_features_only); None:
    # unknown until attached
    kind: Optional[str]
    inputs: Tuple[str, ...]         # image inputs, [reference, distorted] for FR
    outputs: Tuple[str, ...]        # the scores it writes
    description: str                # what it computes
    meaning: str                    # how to read its score
    range: Optional[Tuple[float, float]]
    higher_is_better: Optional[bool]
    min_size: Optional[Tuple[int, int]]  # (width, height) of the smallest frame it scores


_MAX_SIDECAR_BYTES = 1 << 20


def _reads_features_only(model_path: str) -> bool:
    """True when the model's sidecar names no image inputs ("input_names",
    "kind") and binds inputs only to features ("input_sources" entries with
    "feature"): a feature-vector model such as vmaf_motion2, which reads no
    picture. The C catalog leaves such a model's kind unknown; only attaching
    it tells for sure, so this is what the listing shows instead of "?"."""
    stem = model_path[:-5] if model_path.endswith(".onnx") else model_path
    try:
        # Without blocking: a FIFO is no sidecar, and is not waited on.
        fd = os.open(stem + ".json", os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return False
            text = f.read(_MAX_SIDECAR_BYTES + 1)
        if len(text) > _MAX_SIDECAR_BYTES:
            return False
        sidecar = json.loads(text)
    except (OSError, ValueError, RecursionError):
        return False
    if not isinstance(sidecar, dict) or "input_names" in sidecar or "kind" in sidecar:
        return False
    sources = sidecar.get("input_sources")
    return (isinstance(sources, dict) and bool(sources) and
            all(isinstance(v, dict) and set(v) <= {"feature", "offset"} and "feature" in v
                for v in sources.values()))


def _entry(e) -> ModelEntry:
    kind = lib.vmaf_dnn_model_kind_name(e.kind)
    path = os.fsdecode(ffi.string(e.path))
    if kind != ffi.NULL:
        kind = _text(kind)
    else:
        kind = "features" if _reads_features_only(path) else None
    return ModelEntry(
        name=decode_name(e.name, "a model name"),
        path=path,
        kind=kind,
        inputs=tuple(decode_name(e.inputs[i], "a model input") for i in range(e.n_inputs)),
        outputs=tuple(decode_name(e.outputs[i], "a model output") for i in range(e.n_outputs)),
        description=_text(e.description),
        meaning=_text(e.meaning),
        range=(e.range[0], e.range[1]) if e.has_range else None,
        higher_is_better=None if e.higher_is_better < 0 else bool(e.higher_is_better),
        min_size=(e.min_width, e.min_height) if e.min_width and e.min_height else None,
    )


def _open(name) -> List[ModelEntry]:
    out = ffi.new("VmafDnnCatalog **")
    check(lib.vmaf_dnn_catalog_open(out, ffi.NULL if name is None
                                    else c_path(name, "model name or path")))
    cat = out[0]
    try:
        return [_entry(lib.vmaf_dnn_catalog_entry(cat, i))
                for i in range(lib.vmaf_dnn_catalog_count(cat))]
    finally:
        lib.vmaf_dnn_catalog_close(cat)


def catalog() -> List[ModelEntry]:
    """Every model on the search path, in lookup order (shadowed names left
    out)."""
    return _open(None)


def describe(model) -> ModelEntry:
    """The entry of one model, by name or path; its sidecar must load."""
    return _open(model)[0]


def is_path(model) -> bool:
    """True when `model` is a path, False when it is a name to look up."""
    text = os.fspath(model)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    return "/" in text or text.endswith(".onnx")


def resolve(model) -> str:
    """The path of a model given by name or path (a path comes back as it
    is). An unknown name raises FileNotFoundError listing the known ones."""
    buf = ffi.new("char[]", 4096)
    check(lib.vmaf_dnn_model_resolve(c_path(model, "model name or path"), buf, len(buf)))
    return os.fsdecode(ffi.string(buf))


def path(name) -> pathlib.Path:
    """Path of the model `name` (its sidecar is the same path with .json)."""
    return pathlib.Path(resolve(name))


def default_models(no_reference: bool = False) -> List[str]:
    """The models that run when the user names none (vmaf_dnn_default_models)."""
    names = lib.vmaf_dnn_default_models(lib.VMAF_DNN_MODEL_NR if no_reference
                                        else lib.VMAF_DNN_MODEL_FR)
    out = []
    i = 0
    while names[i] != ffi.NULL:
        out.append(_text(names[i]))
        i += 1
    return out
