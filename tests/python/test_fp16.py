"""vmafdnn.fp32_to_fp16 / fp16_to_fp32 against numpy, bit for bit."""
import numpy as np
import pytest

import vmafdnn


def bits16(a):
    return np.asarray(a).view(np.uint16)


@pytest.mark.parametrize("value, expected_bits", [
    (0.0, 0x0000), (-0.0, 0x8000), (1.0, 0x3C00), (-2.0, 0xC000),
    (65504.0, 0x7BFF),            # largest finite fp16
    (65519.99, 0x7BFF),           # rounds down to it
    (65520.0, 0x7C00),            # the halfway point rounds up to Inf
    (1e9, 0x7C00), (-1e9, 0xFC00), (np.inf, 0x7C00), (-np.inf, 0xFC00),
    (2.0 ** -24, 0x0001),         # smallest subnormal
    (2.0 ** -25, 0x0000),         # half of it: a tie, rounds to even (0)
    (3 * 2.0 ** -25, 0x0002),     # 1.5 x smallest: tie, rounds to even (2)
    (2.0 ** -14 - 2.0 ** -24, 0x03FF),  # largest subnormal
    (2.0 ** -14, 0x0400),         # smallest normal
    (1 + 2.0 ** -11, 0x3C00),     # tie between 1 and 1+2^-10: to even
    (1 + 3 * 2.0 ** -11, 0x3C02),  # tie: to even, upwards
])
def test_edge_values(value, expected_bits):
    got = vmafdnn.fp32_to_fp16(np.array([value], np.float32))
    assert got.dtype == np.float16
    assert int(bits16(got)[0]) == expected_bits
    assert int(bits16(np.float32(value).astype(np.float16))) == expected_bits


def test_nan_keeps_sign_and_payload_like_numpy():
    patterns = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA00000, 0xFFFFFFFF,
                         0x7F802000], np.uint32)
    x = patterns.view(np.float32)
    got = vmafdnn.fp32_to_fp16(x)
    assert np.isnan(got).all()
    np.testing.assert_array_equal(bits16(got), bits16(x.astype(np.float16)))


def test_fp16_to_fp32_is_exact_for_all_65536_values():
    all16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    got = vmafdnn.fp16_to_fp32(all16)
    np.testing.assert_array_equal(got.view(np.uint32), all16.astype(np.float32).view(np.uint32))
    # And back: every fp16 survives the round trip, NaN payloads included.
    np.testing.assert_array_equal(bits16(vmafdnn.fp32_to_fp16(got)), bits16(all16))


def test_shapes_and_non_contiguous_input():
    x = np.linspace(-70000, 70000, 24, dtype=np.float32).reshape(2, 3, 4)
    got = vmafdnn.fp32_to_fp16(x[:, ::2, :])
    assert got.shape == (2, 2, 4)
    np.testing.assert_array_equal(bits16(got), bits16(x[:, ::2, :].astype(np.float16)))
    assert vmafdnn.fp16_to_fp32(np.zeros((0,), np.float16)).shape == (0,)


def test_fp32_bit_patterns_match_numpy():
    """Every 31st of the 2^32 fp32 patterns (31 is prime to every power of two, so every
    exponent and every low-bit pattern of the mantissa is met), and all of those where the
    result changes kind. All 2^32 are compared with the processor's own conversion in C
    (tests/c/test_fp16.c, exhaustive in the full test tier); numpy here is a second,
    independent reference (this whole sweep took six minutes of a ten-minute suite)."""
    step, chunk = 31, 1 << 22
    offsets = np.arange(chunk, dtype=np.uint64) * step
    dense = [0x00000000, 0x33000000, 0x33800000, 0x387f0000, 0x38800000, 0x477f0000,
             0x7f800000, 0x7fbf0000]
    blocks = [np.arange(b, b + (1 << 16), dtype=np.uint64) | sign
              for b in dense for sign in (0, 0x80000000)]
    blocks += [offsets + start for start in range(0, 1 << 32, chunk * step)]
    for block in blocks:
        x = block[block < (1 << 32)].astype(np.uint32).view(np.float32)
        with np.errstate(all="ignore"):
            expected = x.astype(np.float16).view(np.uint16)
        got = vmafdnn.fp32_to_fp16(x).view(np.uint16)
        if not np.array_equal(got, expected):
            bad = np.flatnonzero(got != expected)[0]
            pytest.fail(f"fp32 bits {x.view(np.uint32)[bad]:#010x}: got {got[bad]:#06x}, "
                        f"numpy {expected[bad]:#06x}")
