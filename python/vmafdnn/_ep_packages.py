"""Installed plugin execution-provider packages (``onnxruntime_ep_*``), found without importing
or loading them and announced in VMAFDNN_EP_LIBRARIES as the package is imported, before
anything needs ONNX Runtime: the C library reads that variable once, when the first session,
context or EP query loads ORT, and child processes (an FFmpeg with the vmafdnn filter) inherit
it. Only the standard library: importing the package stays cheap (no numpy)."""
import os
import sys
from typing import Dict, List

#: Installed ``onnxruntime_ep_*`` packages that could not give a library path:
#: package name -> why (registration outcomes are in :func:`ep_libraries`).
EP_PACKAGE_ERRORS: Dict[str, str] = {}

#: The symbol every ONNX Runtime plugin EP library exports (with
#: ReleaseEpFactory): what makes a shared library of a package its plugin.
_EP_ENTRY_POINT = b"CreateEpFactories"
_EP_PREFIX = "onnxruntime_ep_"


def _site_dirs() -> List[str]:
    """The interpreter's site-packages folders, where installed distributions
    live: sysconfig's purelib and platlib, site.getsitepackages() and the
    user site when it is enabled, absolute paths only, in sys.path order.
    Never '', the current folder, a script's folder (sys.path[0]) or a
    PYTHONPATH entry: a file there is not an installed package."""
    import site
    import sysconfig
    found = []
    paths = sysconfig.get_paths()
    found += [paths.get("purelib"), paths.get("platlib")]
    try:
        found += site.getsitepackages()
    except AttributeError:  # an old virtualenv's site.py
        pass
    if site.ENABLE_USER_SITE:
        found.append(site.getusersitepackages())
    dirs: List[str] = []
    seen = set()
    for d in found:
        if not d or not os.path.isabs(d) or not os.path.isdir(d):
            continue
        real = os.path.realpath(d)
        if real not in seen:
            seen.add(real)
            dirs.append(d)
    order = {os.path.realpath(p): n for n, p in enumerate(sys.path) if p and os.path.isabs(p)}
    return sorted(dirs, key=lambda d: order.get(os.path.realpath(d), len(order)))


def _elf_exports(path: str, symbol: bytes) -> bool:
    """Whether ``path`` is an ELF shared object whose dynamic symbol table
    defines ``symbol`` as a global function, read from the file's section
    headers (.dynsym and its string table) without loading it. Anything
    else, a malformed or truncated file included, is False."""
    import stat
    import struct
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):  # a FIFO or device would block or lie
                return False
            size = st.st_size

            def read(offset: int, length: int) -> bytes:
                if offset < 0 or length < 0 or offset + length > size:
                    raise ValueError("outside the file")
                f.seek(offset)
                data = f.read(length)
                if len(data) != length:
                    raise ValueError("short read")
                return data

            ident = read(0, 16)
            if ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
                return False
            is64, end = ident[4] == 2, "<" if ident[5] == 1 else ">"
            ehdr = struct.Struct(end + ("HHIQQQIHHHHHH" if is64 else "HHIIIIIHHHHHH"))
            shdr = struct.Struct(end + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII"))
            (e_type, _, _, _, _, shoff, _, _, _, _, shentsize, shnum, _) = \
                ehdr.unpack(read(16, ehdr.size))
            if e_type != 3 or shoff == 0 or shentsize < shdr.size:  # ET_DYN, sections
                return False

            def section(n: int):  # (type, offset, size, link, entsize): same order in both
                s = shdr.unpack(read(shoff + n * shentsize, shdr.size))
                return s[1], s[4], s[5], s[6], s[9]

            if shnum == 0:  # more than 0xff00 sections: the count is section 0's size
                shnum = section(0)[2]
            if shnum * shentsize > size:
                return False
            for n in range(shnum):
                sh_type, offset, length, link, entsize = section(n)
                if sh_type != 11:  # SHT_DYNSYM
                    continue
                if link >= shnum:
                    return False
                _, str_offset, str_length, _, _ = section(link)
                strings = read(str_offset, str_length)
                wanted = set()
                at = strings.find(symbol + b"\0")
                while at >= 0:  # names may share a tail: every offset that reads as it
                    wanted.add(at)
                    at = strings.find(symbol + b"\0", at + 1)
                sym = struct.Struct(end + ("IBBHQQ" if is64 else "IIIBBH"))
                if not wanted or entsize < sym.size:
                    return False
                table = read(offset, length - length % entsize)
                for k in range(0, len(table), entsize):
                    fields = sym.unpack_from(table, k)
                    name, info, other, shndx = (fields[:4] if is64 else
                                                (fields[0], fields[3], fields[4], fields[5]))
                    if (name in wanted and shndx != 0 and info >> 4 in (1, 2)  # GLOBAL, WEAK
                            and info & 0xF in (2, 10) and other & 3 in (0, 3)):  # FUNC, IFUNC
                        return True
                return False
            return False
    except (OSError, ValueError, struct.error, OverflowError, MemoryError):
        return False


def _is_shared_library(name: str) -> bool:
    return name.endswith(".so") or ".so." in name


def _one_library(paths) -> List[str]:
    """`paths` with the versioned names of one library (libX.so, libX.so.1, libX.so.1.8.1:
    wheels cannot hold symlinks, so onnxruntime-ep-openvino ships three copies) reduced to
    its unversioned name, the one the package's own get_library_path() names."""
    paths = sorted(paths)
    stems = {os.path.join(os.path.dirname(p), os.path.basename(p).split(".so", 1)[0])
             for p in paths}
    if len(paths) > 1 and len(stems) == 1:
        return [min(paths, key=len)]
    return paths


def _ep_package_entries() -> List[str]:
    """``NAME=PATH`` entries for every installed ``onnxruntime_ep_*`` package
    (the way ORT's plugin EPs ship: onnxruntime-ep-openvino, -webgpu,
    -nv-tensorrt-rtx, ...). Only installed distributions count (their
    metadata in :func:`_site_dirs`), and nothing is imported, loaded or run:
    the library is the one shared object among the files the distribution
    records (RECORD) inside its ``onnxruntime_ep_*`` package that exports
    CreateEpFactories, as its ELF symbol table says. A package that gives no
    such library is skipped with its reason in EP_PACKAGE_ERRORS."""
    dirs = _site_dirs()
    present: Dict[str, str] = {}  # package folder -> the first site folder holding it
    for d in dirs:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for n in names:
            if n.startswith(_EP_PREFIX) and n.isidentifier() and os.path.isdir(
                    os.path.join(d, n)):
                present.setdefault(n, d)
    if not present:  # the usual case: no metadata is read at all
        return []
    from importlib import metadata
    entry = _EP_ENTRY_POINT.decode()
    entries = []
    taken = set()
    for dist in metadata.distributions(path=dirs):
        packages: Dict[str, list] = {}
        try:
            for f in dist.files or ():
                parts = f.parts
                if len(parts) >= 2 and parts[0] in present and ".." not in parts:
                    packages.setdefault(parts[0], []).append((f.name, str(dist.locate_file(f))))
        except Exception:  # unreadable metadata must not break vmafdnn
            continue  # its packages are reported as unrecorded below
        for package in sorted(packages):
            if package in taken:  # an earlier site folder shadows it, as for import
                continue
            taken.add(package)
            libraries = [path for name, path in packages[package] if _is_shared_library(name)]
            plugins = _one_library(p for p in libraries if _elf_exports(p, _EP_ENTRY_POINT))
            if len(plugins) != 1:
                EP_PACKAGE_ERRORS[package] = (
                    "it has no shared library" if not libraries else
                    f"none of its {len(libraries)} shared libraries exports {entry}"
                    if not plugins else
                    f"{len(plugins)} of its shared libraries export {entry}, so which one "
                    f"is the plugin is not clear: {', '.join(sorted(plugins))}")
                continue
            path = os.path.abspath(plugins[0])
            if ":" in package + path or "=" in package:
                EP_PACKAGE_ERRORS[package] = f"its library path cannot be listed: {path!r}"
                continue
            entries.append(f"{package}={path}")
    for package in sorted(set(present) - taken):
        EP_PACKAGE_ERRORS[package] = (f"no installed distribution in {present[package]} "
                                      "records its files (RECORD)")
    return sorted(entries)


def _announce_ep_packages() -> None:
    """Adds the installed plugin EP packages to VMAFDNN_EP_LIBRARIES, which
    the C library reads once, when the first session, context or EP query
    needs ORT: registration stays lazy (no ORT or OpenVINO start-up at
    import) and one mechanism serves C, Python and child processes. Entries
    the user already listed are kept first."""
    entries = _ep_package_entries()
    if not entries:
        return
    current = os.environ.get("VMAFDNN_EP_LIBRARIES", "")
    have = set(current.split(":"))
    added = [e for e in entries if e not in have]
    if added:
        os.environ["VMAFDNN_EP_LIBRARIES"] = ":".join(([current] if current else []) + added)


if os.environ.get("VMAFDNN_NO_EP_PACKAGES") != "1":
    _announce_ep_packages()
