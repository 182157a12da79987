"""The library's operators with their CUDA variants (ort_custom_ops.c: VifInteger, AdmInteger
and MotionInteger also registered for ORT's CUDA EP, computed by the GPU kernels of csrc/gpu).
A GPU session is given that domain when the kernels are ready on its device; here, with no GPU,
VMAFDNN_TEST_CUDA_OPS_EVERYWHERE=1 gives it to every session: ORT must accept two kernels of
one op name for two EPs and place the CPU EP's, so VMAF's features score exactly as without
them, every node on the CPU EP."""
import numpy as np
import pytest

import vmafdnn
from vmafdnn import models as builtin


def clip(width, height, frames, bpc, seed):
    rng = np.random.default_rng(seed)
    peak = (1 << bpc) - 1
    dtype = np.uint8 if bpc == 8 else np.uint16
    yy, xx = np.mgrid[0:height, 0:width]
    refs, dists = [], []
    for t in range(frames):
        ref = (np.sin((xx + 3 * t) / 7.0) * np.cos(yy / 11.0) * 0.35 + 0.5) * peak
        ref = np.clip(ref + rng.normal(0, 0.02 * peak, ref.shape), 0, peak)
        dist = np.clip(ref + rng.normal(0, 0.04 * peak, ref.shape), 0, peak)
        refs.append(ref.round().astype(dtype))
        dists.append(dist.round().astype(dtype))
    return refs, dists


def features(refs, dists, bpc):
    report = vmafdnn.score(iter(refs), iter(dists), [str(builtin.path("vmaf_features"))],
                           device="cpu", threads=1, bitdepth=bpc if bpc > 8 else None)
    [model] = report["models"]
    values = {k: [f["metrics"][k] for f in report["frames"]] for k in report["frames"][0]["metrics"]}
    return values, model


@pytest.mark.parametrize("bpc", [8, 10])
def test_cpu_sessions_take_the_cpu_variants_beside_the_cuda_ones(monkeypatch, bpc):
    monkeypatch.setenv("VMAFDNN_MODEL_FORMS", "CPU")
    refs, dists = clip(96, 64, 4, bpc, seed=bpc)
    monkeypatch.delenv("VMAFDNN_TEST_CUDA_OPS_EVERYWHERE", raising=False)
    plain, plain_model = features(refs, dists, bpc)
    monkeypatch.setenv("VMAFDNN_TEST_CUDA_OPS_EVERYWHERE", "1")
    both, model = features(refs, dists, bpc)
    assert model["attached_ep"] == "CPU"
    assert (model.get("form") or "").endswith("vmaf_features_kernels.onnx"), model
    if model.get("ep_nodes"):
        assert model["ep_nodes"][0] == model["ep_nodes"][1] == 3, model["ep_nodes"]
    assert both == plain
    assert all(v > 0 for v in both["vif_scale0"]) and any(v > 0 for v in both["motion"][1:])
