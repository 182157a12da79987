"""Discovery of installed onnxruntime_ep_* plugin packages at import: only
installed distributions count (site-packages, never the current folder, a
script's folder or PYTHONPATH), and nothing is imported or loaded to find
the library: it is the one shared object the distribution records inside its
package that exports CreateEpFactories, read from the ELF symbol table."""
import os
import shutil
import struct
import subprocess
import sys

import pytest

from vmafdnn import _ep_packages

ENTRY = b"CreateEpFactories"

EVIL = """\
import os
open(os.path.join({folder!r}, "MARKER-" + __name__), "w").write("imported")
def get_library_path():
    return {path!r}
"""


def _child_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("VMAFDNN_NO_EP_PACKAGES", "VMAFDNN_EP_LIBRARIES", "PYTHONPATH")}
    env.update(extra)
    return env


def _python(code, cwd, **env):
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=_child_env(**env),
                          capture_output=True, text=True, timeout=120)


def _markers(folder):
    return sorted(n for n in os.listdir(folder) if n.startswith("MARKER"))


@pytest.fixture(scope="module")
def plugin_library(tmp_path_factory):
    """A real ELF shared library exporting the plugin-EP entry points."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        pytest.skip("no C compiler to build a shared library")
    folder = tmp_path_factory.mktemp("elf")
    libs = {}
    for name, source in (
            ("plugin", "int CreateEpFactories(void) { return 0; }\n"
                       "int ReleaseEpFactory(void) { return 0; }\n"),
            ("plain", "int SomethingElse(void) { return 0; }\n"),
            ("caller", "extern int CreateEpFactories(void);\n"
                       "int call_it(void) { return CreateEpFactories(); }\n")):
        src = folder / f"{name}.c"
        src.write_text(source)
        out = folder / f"lib{name}.so"
        flags = ["-Wl,--unresolved-symbols=ignore-all"] if name == "caller" else []
        subprocess.run([gcc, "-shared", "-fPIC", "-o", str(out), str(src), *flags], check=True)
        libs[name] = out.read_bytes()
    return libs


def _make_dist(site, package, files, marker_folder, version="1.0"):
    """An installed distribution in ``site``: ``package``/__init__.py (which
    leaves a marker in ``marker_folder`` when imported) and ``files``
    (relative name in the package -> bytes), with METADATA and RECORD."""
    pkg = site / package
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(EVIL.format(folder=str(marker_folder),
                                                 path=str(pkg / "evil.so")))
    recorded = [f"{package}/__init__.py"]
    for name, data in files.items():
        target = pkg / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        recorded.append(f"{package}/{name}")
    info = site / f"{package}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package.replace('_', '-')}\n"
                                   f"Version: {version}\n")
    recorded += [f"{info.name}/METADATA", f"{info.name}/RECORD"]
    (info / "RECORD").write_text("".join(f"{r},,\n" for r in recorded))
    return pkg


# -- nothing from the current folder runs --------------------------------------------------

def test_import_in_a_folder_with_a_plugin_named_module_runs_nothing(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "onnxruntime_ep_evil.py").write_text(EVIL.format(folder=str(work), path="/x.so"))
    # Even with metadata beside it the folder is not an installed site.
    _make_dist(work, "onnxruntime_ep_evilpkg", {}, work)
    code = ("import os, sys, vmafdnn; print(os.environ.get('VMAFDNN_EP_LIBRARIES', '')); "
            "print(sorted(vmafdnn.EP_PACKAGE_ERRORS)); "
            "print([m for m in sys.modules if m.startswith('onnxruntime_ep_')])")
    result = _python(code, work)
    assert result.returncode == 0, result.stderr
    assert _markers(work) == []
    assert result.stdout.splitlines() == ["", "[]", "[]"]
    script = work / "score.py"  # a script's folder is sys.path[0]
    script.write_text("import vmafdnn\n")
    for argv in ([sys.executable, str(script)], [sys.executable, "-m", "vmafdnn", "models"]):
        result = subprocess.run(argv, cwd=work, env=_child_env(), capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert _markers(work) == [], argv


def test_a_pythonpath_entry_is_not_an_installed_site(tmp_path, plugin_library):
    """PYTHONPATH (like the current folder) is a search path for imports, not
    where installed distributions live: a package there is not announced."""
    site = tmp_path / "pythonpath"
    _make_dist(site, "onnxruntime_ep_fake", {"libfake_plugin.so": plugin_library["plugin"]},
               tmp_path)
    result = _python("import os, vmafdnn; print(os.environ.get('VMAFDNN_EP_LIBRARIES', ''))",
                     tmp_path, PYTHONPATH=str(site))
    assert result.returncode == 0, result.stderr
    assert _markers(tmp_path) == []
    assert "onnxruntime_ep_fake" not in result.stdout


# -- installed distributions ---------------------------------------------------------------

@pytest.fixture
def site_dir(tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(_ep_packages, "_site_dirs", lambda: [str(site)])
    monkeypatch.setattr(_ep_packages, "EP_PACKAGE_ERRORS", {})
    return site


def test_an_installed_plugin_is_found_from_its_record_without_importing_it(
        tmp_path, site_dir, plugin_library):
    pkg = _make_dist(site_dir, "onnxruntime_ep_fake",
                     {"lib/libfake_plugin.so": plugin_library["plugin"],
                      "lib/libhelper.so.1": plugin_library["plain"],
                      "_native.cpython-311-x86_64-linux-gnu.so": plugin_library["caller"]},
                     tmp_path)
    (pkg / "lib" / "libunrecorded.so").write_bytes(plugin_library["plugin"])  # not in RECORD
    assert _ep_packages._ep_package_entries() == [
        f"onnxruntime_ep_fake={pkg / 'lib' / 'libfake_plugin.so'}"]
    assert _ep_packages.EP_PACKAGE_ERRORS == {}
    assert _markers(tmp_path) == [] and "onnxruntime_ep_fake" not in sys.modules


def test_versioned_copies_of_one_plugin_library_name_it_once(tmp_path, site_dir,
                                                            plugin_library):
    """onnxruntime-ep-openvino 1.8.1 ships libonnxruntime_providers_openvino_plugin.so,
    .so.1 and .so.1.8.1 as three copies (a wheel holds no symlinks): that is one library,
    named by its unversioned name, as the package's own get_library_path() does."""
    name = "libonnxruntime_providers_fake_plugin.so"
    pkg = _make_dist(site_dir, "onnxruntime_ep_fake",
                     {name: plugin_library["plugin"], name + ".1": plugin_library["plugin"],
                      name + ".1.8.1": plugin_library["plugin"]}, tmp_path)
    assert _ep_packages._ep_package_entries() == [f"onnxruntime_ep_fake={pkg / name}"]
    assert _ep_packages.EP_PACKAGE_ERRORS == {}


def test_import_announces_an_installed_plugin_without_running_it(tmp_path, plugin_library):
    """End to end in a child: the site folder added the way site-packages
    are (site.getsitepackages), the package announced in
    VMAFDNN_EP_LIBRARIES, its __init__ never run."""
    site = tmp_path / "site-packages"
    pkg = _make_dist(site, "onnxruntime_ep_fake",
                     {"libfake_plugin.so": plugin_library["plugin"]}, tmp_path)
    code = ("import site, sys\n"
            "known = site.getsitepackages\n"
            f"site.getsitepackages = lambda *a: known(*a) + [{str(site)!r}]\n"
            "import os, vmafdnn\n"
            "print(os.environ['VMAFDNN_EP_LIBRARIES'])\n"
            "print(vmafdnn.EP_PACKAGE_ERRORS, 'onnxruntime_ep_fake' in sys.modules)\n")
    result = _python(code, tmp_path, VMAFDNN_EP_LIBRARIES="mine=/opt/mine.so")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"mine=/opt/mine.so:onnxruntime_ep_fake={pkg / 'libfake_plugin.so'}", "{} False"]
    assert _markers(tmp_path) == []
    off = _python(code.replace("os.environ['VMAFDNN_EP_LIBRARIES']",
                               "os.environ.get('VMAFDNN_EP_LIBRARIES', '')"),
                  tmp_path, VMAFDNN_NO_EP_PACKAGES="1")
    assert off.returncode == 0 and off.stdout.splitlines()[0] == "", off.stderr


def test_packages_without_exactly_one_plugin_library_are_skipped_with_the_reason(
        tmp_path, site_dir, plugin_library):
    good = plugin_library["plugin"]
    _make_dist(site_dir, "onnxruntime_ep_plain", {"libplain.so": plugin_library["plain"],
                                                  "libcaller.so": plugin_library["caller"]},
               tmp_path)
    _make_dist(site_dir, "onnxruntime_ep_truncated", {"libcut.so": good[:len(good) // 2],
                                                      "libhead.so": good[:64]}, tmp_path)
    _make_dist(site_dir, "onnxruntime_ep_garbage",
               {"libgarbage.so": os.urandom(4096), "libempty.so": b"",
                "libelfish.so": b"\x7fELF\x02\x01\x01" + b"\xff" * 200}, tmp_path)
    two = _make_dist(site_dir, "onnxruntime_ep_two", {"liba.so": good, "libb.so.2": good},
                     tmp_path)
    _make_dist(site_dir, "onnxruntime_ep_nolib", {"data.bin": good}, tmp_path)
    _make_dist(site_dir, "onnxruntime_ep_ok", {"libok.so": good}, tmp_path)
    (site_dir / "onnxruntime_ep_copied").mkdir()  # no distribution records it
    (site_dir / "onnxruntime_ep_copied" / "libcopied.so").write_bytes(good)
    fifo = site_dir / "onnxruntime_ep_ok" / "libfifo.so"
    os.mkfifo(fifo)  # recorded below: opening it must not block
    record = site_dir / "onnxruntime_ep_ok-1.0.dist-info" / "RECORD"
    record.write_text(record.read_text() + "onnxruntime_ep_ok/libfifo.so,,\n"
                      "onnxruntime_ep_ok/../onnxruntime_ep_two/liba.so,,\n")

    entries = _ep_packages._ep_package_entries()
    assert entries == [f"onnxruntime_ep_ok={site_dir / 'onnxruntime_ep_ok' / 'libok.so'}"]
    errors = _ep_packages.EP_PACKAGE_ERRORS
    assert sorted(errors) == ["onnxruntime_ep_copied", "onnxruntime_ep_garbage",
                              "onnxruntime_ep_nolib", "onnxruntime_ep_plain",
                              "onnxruntime_ep_truncated", "onnxruntime_ep_two"]
    assert errors["onnxruntime_ep_plain"] == \
        "none of its 2 shared libraries exports CreateEpFactories"
    assert errors["onnxruntime_ep_truncated"] == \
        "none of its 2 shared libraries exports CreateEpFactories"
    assert errors["onnxruntime_ep_garbage"] == \
        "none of its 3 shared libraries exports CreateEpFactories"
    assert errors["onnxruntime_ep_two"] == (
        "2 of its shared libraries export CreateEpFactories, so which one is the plugin is "
        f"not clear: {two / 'liba.so'}, {two / 'libb.so.2'}")
    assert errors["onnxruntime_ep_nolib"] == "it has no shared library"
    assert errors["onnxruntime_ep_copied"] == \
        f"no installed distribution in {site_dir} records its files (RECORD)"
    assert _markers(tmp_path) == []
    assert not any(m.startswith("onnxruntime_ep_") for m in sys.modules)


def test_names_that_cannot_be_listed_are_refused(tmp_path, monkeypatch, plugin_library):
    site = tmp_path / "odd:site"
    site.mkdir()
    monkeypatch.setattr(_ep_packages, "_site_dirs", lambda: [str(site)])
    monkeypatch.setattr(_ep_packages, "EP_PACKAGE_ERRORS", {})
    _make_dist(site, "onnxruntime_ep_colon", {"libc.so": plugin_library["plugin"]}, tmp_path)
    assert _ep_packages._ep_package_entries() == []
    assert _ep_packages.EP_PACKAGE_ERRORS["onnxruntime_ep_colon"].startswith(
        "its library path cannot be listed: ")


def test_site_dirs_are_absolute_site_packages_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", str(tmp_path), "."] + sys.path)
    dirs = _ep_packages._site_dirs()
    assert dirs and all(os.path.isabs(d) for d in dirs)
    assert str(tmp_path) not in dirs and os.getcwd() not in dirs
    import sysconfig
    assert sysconfig.get_paths()["purelib"] in dirs


# -- the ELF reader --------------------------------------------------------------------------

def _elf(is64, little, symbols, e_type=3):
    """A minimal ELF: header, .dynsym, .dynstr, section headers (null,
    .dynsym, .dynstr). ``symbols``: (name offset in .dynstr or a name,
    st_info, st_shndx, st_other)."""
    end = "<" if little else ">"
    strings = b"\0"
    offsets = {}
    for name, *_ in symbols:
        if isinstance(name, bytes) and name not in offsets:
            offsets[name] = len(strings)
            strings += name + b"\0"
    sym = struct.Struct(end + ("IBBHQQ" if is64 else "IIIBBH"))
    table = b"\0" * sym.size
    for name, info, shndx, other in symbols:
        at = offsets[name] if isinstance(name, bytes) else name
        table += (sym.pack(at, info, other, shndx, 0x1000, 8) if is64 else
                  sym.pack(at, 0x1000, 8, info, other, shndx))
    ehdr = struct.Struct(end + ("HHIQQQIHHHHHH" if is64 else "HHIIIIIHHHHHH"))
    shdr = struct.Struct(end + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII"))
    head = 16 + ehdr.size
    dynsym_at, dynstr_at = head, head + len(table)
    shoff = dynstr_at + len(strings)
    ident = b"\x7fELF" + bytes([2 if is64 else 1, 1 if little else 2, 1]) + b"\0" * 9
    header = ident + ehdr.pack(e_type, 62 if is64 else 3, 1, 0, 0, shoff, 0, head, 0, 0,
                               shdr.size, 3, 0)
    sections = shdr.pack(*[0] * 10)
    sections += shdr.pack(0, 11, 2, 0, dynsym_at, len(table), 2, 1, 8, sym.size)
    sections += shdr.pack(0, 3, 2, 0, dynstr_at, len(strings), 0, 0, 1, 0)
    return header + table + strings + sections


GLOBAL_FUNC, LOCAL_FUNC, GLOBAL_OBJECT, WEAK_FUNC = 0x12, 0x02, 0x11, 0x22


@pytest.mark.parametrize("is64", [True, False], ids=["64", "32"])
@pytest.mark.parametrize("little", [True, False], ids=["le", "be"])
def test_elf_reader_32_64_bit_both_byte_orders(tmp_path, is64, little):
    def exports(symbols, **kw):
        path = tmp_path / "lib.so"
        path.write_bytes(_elf(is64, little, symbols, **kw))
        return _ep_packages._elf_exports(str(path), ENTRY)

    other = (b"ReleaseEpFactory", GLOBAL_FUNC, 7, 0)
    assert exports([other, (ENTRY, GLOBAL_FUNC, 7, 0)])
    assert exports([(ENTRY, WEAK_FUNC, 7, 0)])
    assert exports([(ENTRY, GLOBAL_FUNC, 7, 3)])  # protected
    assert not exports([other])
    assert not exports([(ENTRY, GLOBAL_FUNC, 0, 0)])  # undefined: imported, not exported
    assert not exports([(ENTRY, LOCAL_FUNC, 7, 0)])
    assert not exports([(ENTRY, GLOBAL_OBJECT, 7, 0)])
    assert not exports([(ENTRY, GLOBAL_FUNC, 7, 2)])  # hidden
    assert not exports([(ENTRY, GLOBAL_FUNC, 7, 0)], e_type=2)  # an executable
    # Names share tails in .dynstr: "xCreateEpFactories" + 1 reads as the entry point.
    assert exports([(b"x" + ENTRY, GLOBAL_FUNC, 7, 0), (1 + 1, GLOBAL_FUNC, 7, 0)])
    assert not exports([(b"x" + ENTRY, GLOBAL_FUNC, 7, 0)])
    whole = _elf(is64, little, [(ENTRY, GLOBAL_FUNC, 7, 0)])
    for cut in range(0, len(whole), 7):  # truncated anywhere: no, and no exception
        (tmp_path / "cut.so").write_bytes(whole[:cut])
        assert not _ep_packages._elf_exports(str(tmp_path / "cut.so"), ENTRY), cut


def test_elf_reader_on_real_libraries_and_non_files(tmp_path, plugin_library):
    for name, expected in (("plugin", True), ("plain", False), ("caller", False)):
        (tmp_path / name).write_bytes(plugin_library[name])
        assert _ep_packages._elf_exports(str(tmp_path / name), ENTRY) is expected, name
    assert not _ep_packages._elf_exports(str(tmp_path), ENTRY)  # a folder
    assert not _ep_packages._elf_exports(str(tmp_path / "missing.so"), ENTRY)
    os.mkfifo(tmp_path / "fifo.so")
    assert not _ep_packages._elf_exports(str(tmp_path / "fifo.so"), ENTRY)
    rng = __import__("random").Random(5)
    data = bytearray(plugin_library["plugin"])
    for _ in range(300):  # corrupted headers: never an exception
        corrupt = bytearray(data)
        for _ in range(8):
            corrupt[rng.randrange(0, 64 if rng.random() < 0.5 else len(corrupt))] = \
                rng.randrange(256)
        (tmp_path / "corrupt.so").write_bytes(bytes(corrupt))
        _ep_packages._elf_exports(str(tmp_path / "corrupt.so"), ENTRY)
