"""Write the fuzzing seed corpora into tests/fuzz/corpus/<harness>/ (or OUTDIR).

Usage: python tests/fuzz/make_seeds.py [OUTDIR]

The seeds are tiny and checked in; this script is how they were made, so a
reviewer can see what each one is and regenerate them (the output is
byte-identical from run to run). Crash inputs found by fuzzing are checked in
beside them as regression seeds named ``regress-*`` and are not written here.

Input formats (see each harness's header comment):
  fuzz_onnx_scan  1 mode byte (bit 0: scan with the harness's model directory,
                  which holds weights.bin, sub/, escape -> /, loop -> loop),
                  then the model bytes
  fuzz_sidecar    the sidecar JSON text itself
  fuzz_y4m        5 header bytes [mode, width, height, pix_fmt, bitdepth]
                  (meaning in tests/fuzz/fuzz_y4m.py), then the stream bytes
"""

import json
import os
import struct
import sys

import onnx
from onnx import TensorProto, helper

OPSET = 17
IR_VERSION = 8
HERE = os.path.dirname(os.path.abspath(__file__))


def write(outdir, harness, name, data):
    directory = os.path.join(outdir, harness)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


# ---- fuzz_onnx_scan -------------------------------------------------------------------------

def model_bytes(nodes, inits=(), sparse=(), inputs=("x",), outputs=("y",), functions=()):
    graph = helper.make_graph(
        list(nodes), "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in outputs],
        initializer=list(inits), sparse_initializer=list(sparse))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              functions=list(functions))
    model.ir_version = IR_VERSION
    return model


def external_tensor(name, location, offset=None, length=None):
    t = helper.make_tensor(name, TensorProto.FLOAT, [2], [0.0, 0.0])
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            entry = t.external_data.add()
            entry.key, entry.value = key, value
    return t


def body_graph(op="Identity"):
    return helper.make_graph([helper.make_node(op, ["a"], ["b"])], "body",
                             [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])],
                             [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])


def nested_if(levels, inner_op="Identity"):
    graph = body_graph(inner_op)
    for _ in range(levels):
        node = helper.make_node("If", ["c"], ["b"], then_branch=graph, else_branch=body_graph())
        graph = helper.make_graph([node], "level", [], [
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])
    return graph


def onnx_seeds():
    add = model_bytes([helper.make_node("Add", ["x", "x"], ["y"])])
    weight = helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 3, 3], [1 / 9] * 9)
    conv = model_bytes([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                        helper.make_node("ReduceMean", ["c"], ["y"], keepdims=0)], inits=[weight])
    if2 = model_bytes([helper.make_node("If", ["x"], ["y"], then_branch=nested_if(1),
                                        else_branch=body_graph())])
    if_deep = model_bytes([helper.make_node("If", ["x"], ["y"], then_branch=nested_if(9),
                                            else_branch=body_graph())])
    loops = model_bytes([helper.make_node("Loop", ["n", "", "x"], [f"y{i}"], body=body_graph("Add"))
                         for i in range(2)], inputs=("x", "n"), outputs=("y0", "y1"))
    dropout = model_bytes([helper.make_node("Dropout", ["x", "r", "t"], ["y"])])
    custom = model_bytes([helper.make_node("FusedConv", ["x"], ["y"], domain="com.microsoft")])
    random_op = model_bytes([helper.make_node("RandomNormal", [], ["y"], shape=[1])])
    constant_ext = model_bytes([helper.make_node(
        "Constant", [], ["y"], value=external_tensor("k", "weights.bin", "0", "8"))])
    sparse_values = external_tensor("sv", "weights.bin", "8", "8")
    sparse = helper.make_sparse_tensor(sparse_values,
                                       helper.make_tensor("si", TensorProto.INT64, [2], [0, 1]),
                                       [4])
    sparse_model = model_bytes([helper.make_node("Identity", ["x"], ["y"])], sparse=[sparse])
    function = helper.make_function("local", "f", ["a"], ["b"],
                                    [helper.make_node("Identity", ["a"], ["b"])],
                                    [helper.make_opsetid("", OPSET)])
    with_function = model_bytes([helper.make_node("Identity", ["x"], ["y"])], functions=[function])
    training = onnx.ModelProto()
    training.CopyFrom(add)
    training.training_info.add()

    seeds = {
        "add": (0, add), "add-dir": (1, add), "conv-mean": (1, conv), "if-2": (0, if2),
        "if-too-deep": (0, if_deep), "loop-2": (0, loops), "dropout-training": (0, dropout),
        "custom-domain": (0, custom), "random-normal": (0, random_op),
        "constant-external": (1, constant_ext), "sparse-external": (1, sparse_model),
        "function": (0, with_function), "training-info": (0, training),
    }
    externals = {
        "ext-ok": ("weights.bin", "16", "32"), "ext-no-length": ("weights.bin", "4", None),
        "ext-whole-file": ("weights.bin", None, None), "ext-past-end": ("weights.bin", "60", "8"),
        "ext-bad-offset": ("weights.bin", "+1", None), "ext-missing": ("nothere.bin", None, None),
        "ext-dotdot": ("../weights.bin", None, None), "ext-absolute": ("/etc/passwd", None, None),
        "ext-escape-link": ("escape/etc/passwd", None, None), "ext-dir": ("sub", None, None),
        "ext-link-loop": ("loop", None, None), "ext-not-dir": ("weights.bin/x", None, None),
        "ext-mem-marker": ("*/_ORT_MEM_ADDR_/*", "0", "8"),
        "ext-backslash": ("sub\\weights.bin", None, None),
        "ext-offset-overflow": ("weights.bin", "18446744073709551616", None),
        # PATH_MAX is 4096: the location alone is too long, or only once it is
        # joined to the model directory (any directory path over 15 bytes).
        "ext-long-location": ("x/" * 2050, None, None),
        "ext-long-joined-path": ("x/" * 2040, None, None),
    }
    for name, (location, offset, length) in externals.items():
        m = model_bytes([helper.make_node("Add", ["x", "e"], ["y"])],
                        inits=[external_tensor("e", location, offset, length)])
        seeds[name] = (1, m)
    seeds["ext-no-dir"] = (0, seeds["ext-ok"][1])

    out = {}
    for name, (mode, model) in seeds.items():
        out[name] = bytes([mode]) + model.SerializeToString()
    # ORT's flatbuffer identifier at offset 4, and a few raw wire-format edge cases.
    out["ortm"] = b"\x00" + b"\x10\x00\x00\x00ORTM" + bytes(8)
    out["group-wire-type"] = b"\x00" + b"\x3b\x3c"
    out["long-varint"] = b"\x00" + b"\x08" + b"\xff" * 10 + b"\x01"
    out["len-past-end"] = b"\x00" + b"\x3a\x7f\x0a"
    return out


# ---- fuzz_sidecar ---------------------------------------------------------------------------

def sidecar_seeds():
    full = {
        "kind": "fr", "name": "psnr_y", "input_names": ["ref", "dis"], "output_name": "score",
        "output_names": ["a", "b"], "features": ["psnr_y", "ssim_y"],
        "feature_mean": [30.5, 0.9], "feature_std": [5, 0.05], "native_resolution": True,
        "resize": "bilinear", "opset": 17, "description": "all keys", "higher_is_better": True,
        "range": [0, 100], "cap_db_per_bpc": [6, 12], "unknown": {"nested": [None, False]},
    }
    texts = {
        "full": json.dumps(full, indent=1),
        "minimal-nr": '{"kind":"nr","name":"sharpness_nr","range":[0,1]}',
        "builtin-psnr": '{"kind": "fr", "name": "psnr_y", "native_resolution": true, '
                        '"higher_is_better": true, "cap_db_per_bpc": [6, 12]}',
        "escapes": '{"name":"\\u00e9\\ud83d\\ude00 \\n\\"\\\\\\/\\b\\f\\r\\t","description":'
                   '"caf\u00e9 \u2603 \U0001f600"}',
        "numbers": '{"opset":0,"range":[-1.5e308,2.5E-320],"cap_db_per_bpc":[-0.0,1e+2],'
                   '"feature_mean":[1]}',
        "wrong-types": '{"kind":"FR","resize":7,"opset":1.5,"features":[],"native_resolution":1}',
        "nul-in-string": '{"name":"a\\u0000b"}',
        "lone-surrogate": '{"name":"\\ud800"}',
        "duplicate-key": '{"name":"a","n\\u0061me":"b"}',
        "not-object": '[1, "two", true, null, {}]',
        "trailing-comma": '{"a":[1,2,],}',
        "leading-zero": '{"opset":017}',
        "deep-64": "[" * 64 + "]" * 64,
        "deep-65": "[" * 65 + "]" * 65,
        "many-keys": "{" + ",".join(f'"k{i}":{i}' for i in range(40)) + "}",
        "std-zero": '{"features":["a","b"],"feature_std":[1,0]}',
        "range-reversed": '{"range":[2,1]}',
        # Just over the caps: VDNN_SIDECAR_MAX_STRING bytes and MAX_ENTRIES entries.
        "long-string": '{"name":"' + "n" * 4097 + '"}',
        "many-entries": '{"output_names":[' + ",".join(['"o"'] * 257) + "]}",
    }
    out = {name: text.encode("utf-8") for name, text in texts.items()}
    out["bom"] = b"\xef\xbb\xbf{}"
    out["bad-utf8"] = b'{"name":"\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80"}'
    out["control-char"] = b'{"name":"a\x01b"}'
    return out


# ---- fuzz_y4m -------------------------------------------------------------------------------

# Indices into fuzz_y4m.PIX_FMTS.
FMT = {"420": 0, "422": 1, "444": 2, "400": 3, "yuv420p10le": 5, "gray12": 7}


def y4m(header, frames):
    return header.encode("ascii") + b"\n" + b"".join(b"FRAME\n" + f for f in frames)


def samples16(values):
    return struct.pack(f"<{len(values)}H", *values)


def y4m_seeds():
    def seed(mode, data, width=0, height=0, fmt=0, depth=0):
        return bytes([mode, width, height, fmt, depth]) + data

    f420 = bytes(range(12))  # 4x2 4:2:0, 8-bit: 8 + 2 + 2 bytes
    out = {
        "y4m-420": seed(0, y4m("YUV4MPEG2 W4 H2 F25:1 Ip A1:1 C420jpeg", [f420, f420[::-1]])),
        "y4m-444p10": seed(0, y4m("YUV4MPEG2 W2 H1 F30000:1001 C444p10",
                                  [samples16([0, 1, 512, 1023, 7, 9])])),
        "y4m-mono": seed(4, y4m("YUV4MPEG2 W3 H1 Cmono XCOLORRANGE=FULL", [b"abc", b"def"])),
        "y4m-xyscss": seed(0, y4m("YUV4MPEG2 W2 H1 XYSCSS=422P12", [samples16([1, 2, 3, 4])])),
        "y4m-422p16": seed(0, y4m("YUV4MPEG2 W1 H2 C422p16 Ip", [samples16([65535] * 6)])),
        "y4m-odd-420": seed(0, y4m("YUV4MPEG2 W3 H3 C420mpeg2", [bytes(range(17))])),
        "y4m-frame-params": seed(0, b"YUV4MPEG2 W2 H2\nFRAME Ixyz\n" + bytes(6)),
        "y4m-truncated": seed(0, y4m("YUV4MPEG2 W4 H2", [f420[:7]])),
        "y4m-interlaced": seed(0, y4m("YUV4MPEG2 W4 H2 It", [f420])),
        "y4m-huge": seed(0, b"YUV4MPEG2 W32768 H8192 C444p16\nFRAME\n" + bytes(16)),
        "y4m-10bit-overflow": seed(0, y4m("YUV4MPEG2 W1 H1 Cmono10", [samples16([1024])])),
        "y4m-trickle": seed(1, y4m("YUV4MPEG2 W4 H2 F25:1", [f420, f420])),
        "open-y4m": seed(2, y4m("YUV4MPEG2 W4 H2", [f420])),
        "open-y4m-geometry": seed(10, y4m("YUV4MPEG2 W4 H2", [f420]), 4, 2, FMT["420"], 8),
        "open-raw": seed(10, f420 * 2, 4, 2, FMT["420"], 8),
        "open-raw-buffered": seed(26, f420 * 2, 4, 2, FMT["420"], 8),
        "raw-420": seed(3, f420 * 3, 4, 2, FMT["420"], 8),
        "raw-10le": seed(7, samples16([1, 1000, 3, 4, 5, 6]), 2, 2, FMT["yuv420p10le"], 0),
        "raw-gray12": seed(19, samples16([4095, 0, 4096]), 3, 1, FMT["gray12"], 0),
        "raw-partial": seed(3, f420 + b"x", 4, 2, FMT["420"], 8),
        "path-raw-partial": seed(35, f420 + b"x", 4, 2, FMT["420"], 8),
        "path-open-raw": seed(42, f420 * 2, 4, 2, FMT["420"], 8),
        "path-open-y4m-name": seed(98, y4m("YUV4MPEG2 W4 H2", [f420])),
        "path-open-not-y4m": seed(98, b"RIFF" + bytes(20)),
    }
    return out


def main(argv):
    outdir = argv[1] if len(argv) > 1 else os.path.join(HERE, "corpus")
    for harness, seeds in (("fuzz_onnx_scan", onnx_seeds()), ("fuzz_sidecar", sidecar_seeds()),
                           ("fuzz_y4m", y4m_seeds())):
        for name, data in seeds.items():
            write(outdir, harness, name, data)
        total = sum(len(d) for d in seeds.values())
        print(f"{harness}: {len(seeds)} seeds, {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
