"""Zeroes, in a CUDA shared library, the GPU code of every architecture but one, so that the
library compresses to what a lent GPU machine's call can carry (the device tool carries 64 MiB;
onnxruntime-gpu 1.31.1's CUDA provider is 284 MB, 185 MB under xz, and 39 MB with only sm_90's
code kept).

    python tools/keep_cuda_arch.py IN OUT --sm 90

A CUDA library holds its kernels in the ELF section `.nv_fatbin`: a run of fat binaries (header:
magic 0xBA55ED50, version, header size, size of the entries), each a list of entries (a cubin of
one SM architecture, or PTX) with their own header (kind, header size, payload size, SM at
byte 28). The CUDA driver loads, for the device at hand, the entry of its architecture and never
reads the others. This keeps every header and offset as they were and fills with zeros:
  - the payload of every entry for another architecture, and every PTX entry;
  - the payloads of fat binaries that hold only the kept architecture and no other one (with
    --drop-single-arch, the default): in ONNX Runtime's CUDA provider these are its contrib
    kernels built for sm_90a alone (attention, mixture of experts), which no built-in of this
    library runs. A kernel of one of them, if ever launched, fails to load (a CUDA error that
    ONNX Runtime reports), so the zeroed library is for measuring, never for shipping.

It prints what it kept and zeroed. Nothing but the payload bytes changes: same size, same
symbols, same section table.
"""
import argparse
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
ENTRY_CUBIN = 2


def fatbin_section(data):
    """(offset, size) of the ELF64 section .nv_fatbin."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit("not a 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    names = sections[shstrndx][4]
    for name, _type, _flags, _addr, offset, size in sections:
        end = data.index(b"\0", names + name)
        if data[names + name:end] == b".nv_fatbin":
            return offset, size
    raise SystemExit("no .nv_fatbin section: not a CUDA library")


def fat_binaries(data, start, size):
    """Yields, for each fat binary in the section, its entries as (kind, sm, payload offset,
    payload size)."""
    pos, end = start, start + size
    while pos < end:
        magic, _version, header, entries_size = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:  # the linker pads between fat binaries
            pos += 8
            continue
        entry, last = pos + header, pos + header + entries_size
        entries = []
        while entry < last:
            kind, _ev, entry_header, padded = struct.unpack_from("<HHII", data, entry)
            sm, = struct.unpack_from("<I", data, entry + 28)
            entries.append((kind, sm, entry + entry_header, padded))
            entry += entry_header + padded
        if entry != last:
            raise SystemExit(f"fat binary at {pos:#x}: entries overrun its size")
        yield entries
        pos = last


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--sm", type=int, required=True, help="architecture kept, e.g. 90")
    ap.add_argument("--keep-single-arch", action="store_true",
                    help="keep fat binaries that hold the kept architecture alone too")
    args = ap.parse_args(argv)

    with open(args.input, "rb") as f:
        data = bytearray(f.read())
    start, size = fatbin_section(data)
    kept = zeroed = binaries = 0
    for entries in fat_binaries(bytes(data), start, size):
        binaries += 1
        single = len({sm for _, sm, _, _ in entries}) == 1
        for kind, sm, offset, length in entries:
            if kind == ENTRY_CUBIN and sm == args.sm and (args.keep_single_arch or not single):
                kept += length
                continue
            data[offset:offset + length] = bytes(length)
            zeroed += length
    if kept == 0:
        raise SystemExit(f"no sm_{args.sm} code in {args.input}: nothing would run")
    with open(args.output, "wb") as f:
        f.write(data)
    print(f"{args.input}: {binaries} fat binaries; kept {kept / 1e6:.1f} MB of sm_{args.sm} "
          f"code, zeroed {zeroed / 1e6:.1f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
