"""tools/keep_cuda_arch.py, on a CUDA library made here: an ELF64 file whose .nv_fatbin
section holds a fat binary of two architectures and PTX, and one of the kept architecture
alone."""
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "keep_cuda_arch.py"
MAGIC = 0xBA55ED50
CUBIN, PTX = 2, 1


def entry(kind, sm, payload):
    """A fat binary entry: a 64-byte header (kind, version, header size, payload size, SM at
    byte 28) and its payload, padded to 8 bytes."""
    padded = payload + bytes(-len(payload) % 8)
    header = struct.pack("<HHII", kind, 0x0101, 64, len(padded)) + bytes(16)
    header += struct.pack("<I", sm)
    return header + bytes(64 - len(header)) + padded


def fat_binary(*entries):
    body = b"".join(entries)
    return struct.pack("<IHHQ", MAGIC, 1, 16, len(body)) + body


def elf(fatbin):
    """An ELF64 file of three sections: none, .shstrtab, .nv_fatbin."""
    names = b"\0.shstrtab\0.nv_fatbin\0"
    data_at = 64
    names_at = data_at + len(fatbin)
    table_at = (names_at + len(names) + 7) // 8 * 8
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, table_at, 0, 64, 0, 0, 64, 3, 1)

    def section(name, kind, offset, size):
        return struct.pack("<IIQQQQIIQQ", name, kind, 0, 0, offset, size, 0, 0, 1, 0)

    table = (section(0, 0, 0, 0) + section(1, 3, names_at, len(names)) +
             section(11, 1, data_at, len(fatbin)))
    body = header + fatbin + names
    return body + bytes(table_at - len(body)) + table, data_at


def run(tmp_path, data, *args):
    src, out = tmp_path / "in.so", tmp_path / "out.so"
    src.write_bytes(data)
    proc = subprocess.run([sys.executable, str(TOOL), str(src), str(out), *args],
                          capture_output=True, text=True)
    return proc, out


@pytest.fixture
def library():
    sm80, sm90, ptx, only90 = b"A" * 40, b"B" * 48, b"C" * 24, b"D" * 32
    fatbin = (fat_binary(entry(CUBIN, 80, sm80), entry(CUBIN, 90, sm90), entry(PTX, 90, ptx)) +
              bytes(8) +  # the linker's padding between fat binaries
              fat_binary(entry(CUBIN, 90, only90)))
    data, at = elf(fatbin)
    return data, {name: data.index(payload) for name, payload in
                  (("sm80", sm80), ("sm90", sm90), ("ptx", ptx), ("only90", only90))}


def test_keeps_the_architectures_cubins_of_shared_fat_binaries_only(library, tmp_path):
    data, at = library
    proc, out = run(tmp_path, data, "--sm", "90")
    assert proc.returncode == 0, proc.stderr
    assert "2 fat binaries; kept 0.0 MB of sm_90 code" in proc.stderr
    cut = out.read_bytes()
    assert len(cut) == len(data)
    assert cut[at["sm90"]:at["sm90"] + 48] == b"B" * 48
    for name, size in (("sm80", 40), ("ptx", 24), ("only90", 32)):
        assert cut[at[name]:at[name] + size] == bytes(size), name
    # every header as it was: only payloads change
    changed = [i for i in range(len(data)) if data[i] != cut[i]]
    assert all(any(at[n] <= i < at[n] + s for n, s in (("sm80", 40), ("ptx", 24),
                                                         ("only90", 32))) for i in changed)


def test_keep_single_arch_keeps_fat_binaries_of_that_architecture_alone(library, tmp_path):
    data, at = library
    proc, out = run(tmp_path, data, "--sm", "90", "--keep-single-arch")
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[at["only90"]:at["only90"] + 32] == b"D" * 32


def test_an_architecture_without_code_is_refused(library, tmp_path):
    proc, out = run(tmp_path, library[0], "--sm", "75")
    assert proc.returncode != 0 and "no sm_75 code" in proc.stderr
    assert not out.exists()


def test_a_file_without_fat_binaries_is_refused(tmp_path):
    proc, _ = run(tmp_path, b"\x7fELF" + bytes(60), "--sm", "90")
    assert proc.returncode != 0
    proc, _ = run(tmp_path, b"not an ELF file at all, just some bytes" * 2, "--sm", "90")
    assert proc.returncode != 0 and "not a 64-bit ELF file" in proc.stderr
