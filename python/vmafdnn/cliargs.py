"""The argument types and the printable-text rule of the command line front
ends (``vmafdnn``, ``vmafdnn batch``, ``vmafdnn bdrate``, the reports they
print), in one place.

Every numeric flag is parsed by one of the argparse types here, with its
range: what the code it feeds accepts (a C int, a frame size, islice's
sys.maxsize, ...). A bad value gets an ``argparse.ArgumentTypeError`` whose
text names the value and the range. :func:`printable` is the rule for every
name that reaches a terminal.

This module imports no front end (vmafdnn.cli, vmafdnn.batch, ...): they
import it.
"""
import argparse
import math
import re
import sys
import unicodedata

from . import names
from .errors import int_shown, range_text
from .session import MAX_BATCH, MAX_DEVICE_INDEX, MAX_THREADS
from .video import MAX_DIMENSION

__all__ = ["printable", "int_at_least", "thread_count", "batch_size", "device_index",
           "dimension", "frame_offset", "byte_size", "seconds", "gpu_share", "name_of"]

# Unicode categories printed as escapes: controls (ESC, BEL, CR, ...), format
# characters (bidi overrides that reorder what follows), line and paragraph
# separators, lone surrogates (undecodable bytes) and unassigned code points.
_UNPRINTABLE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def printable(text) -> str:
    """``text`` safe to write to a terminal: every character that could move
    the cursor, change colours, retitle the window or reorder the line
    becomes a Python-style escape (\\x1b, \\u202e, ...). Used for every name
    that comes from a model, a sidecar, a features file or the command line."""
    text = str(text)
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if unicodedata.category(ch) in _UNPRINTABLE:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else
                       f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out)


_INTEGER = re.compile(r"\s*([+-]?)(\d+(?:_\d+)*)\s*")


def int_at_least(minimum: int, maximum=None):
    """An argparse type: an integer in minimum..maximum, refused out of it
    with the range named whole (vmafdnn.errors.range_text, as the Python
    API words it), too small or too large alike; an integer too long for
    int() (over 4,300 digits) is out of range too, not "not an integer"."""
    def parse(text: str) -> int:
        try:
            value = int(text)
            shown = int_shown(value)
        except ValueError:
            match = _INTEGER.fullmatch(text)
            if not match:
                raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
            value = None
            digits = len(match.group(2).replace("_", ""))
            shown = f"{match.group(1).lstrip('+')}a number of {digits} digits"
        if value is None and maximum is None and not shown.startswith("-"):
            raise argparse.ArgumentTypeError(f"{shown} is too large")
        if value is None or value < minimum or (maximum is not None and value > maximum):
            if maximum is None:
                raise argparse.ArgumentTypeError(f"must be at least {minimum} (got {shown})")
            raise argparse.ArgumentTypeError(range_text(minimum, maximum, shown))
        return value
    return parse


thread_count = int_at_least(0, MAX_THREADS)
batch_size = int_at_least(0, MAX_BATCH)
device_index = int_at_least(0, MAX_DEVICE_INDEX)
dimension = int_at_least(1, MAX_DIMENSION)
frame_offset = int_at_least(0, sys.maxsize)

_SIZE = re.compile(r"(\d{1,30}(?:\.\d{1,30})?)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)


def byte_size(text: str) -> int:
    """An argparse type: bytes, as a number with an optional binary unit
    (K, M, G, T; KiB, MB, ... all mean powers of 1024): 512M, 2G, 1.5G.
    Computed exactly (no float: 400 digits are refused, not infinite) and
    rounded up, so that a small non-zero size never becomes 0 (no limit)."""
    from fractions import Fraction
    match = _SIZE.fullmatch(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (examples: 4096, 512M, 2G)")
    number, unit = match.groups()
    value = math.ceil(Fraction(number) * (1 << (10 * " kmgt".index(unit.lower() or " "))))
    if value >= 1 << 64:
        raise argparse.ArgumentTypeError(f"{text!r} is too large (at most 16 EiB - 1)")
    return value


def seconds(text: str) -> float:
    """An argparse type: a non-negative, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number >= 0")
    if value * 1000 > 0xFFFFFFFF:
        raise argparse.ArgumentTypeError(f"{text!r} is more than {0xFFFFFFFF // 1000} s")
    return value


def gpu_share(maximum):
    """An argparse type: GPUs a worker asks for, a finite number 0..maximum
    (fractions share a GPU)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of GPUs") from None
        if not (math.isfinite(value) and 0 <= value <= maximum):
            raise argparse.ArgumentTypeError(f"{text!r} must be a finite number 0..{maximum}")
        return value
    return parse


def name_of(what: str):
    """An argparse type: any spelling the C name table accepts ("OpenVINO_CPU")
    becomes its one name, and an unknown one C's message listing the valid
    names."""
    def parse(text: str) -> str:
        try:
            return names.name(what, names.value(what, text))
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    parse.__name__ = what
    return parse
