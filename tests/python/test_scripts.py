"""Checks of the shell scripts behind the test command (tools/, .ci/run).

They read the scripts as text: the properties below are about how the
scripts are written, and a full run of them takes most of an hour.
"""
import os
import re
import stat
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(ROOT.glob("tools/*.sh")) + [ROOT / ".ci" / "run"]


def code_lines(path: Path):
    """(line number, text) of each command line, comments dropped and
    backslash continuations joined."""
    joined, start = "", None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        line = re.sub(r"\s#\s.*$", "", line)
        if start is None:
            start = number
        if line.endswith("\\"):
            joined += line[:-1] + " "
            continue
        yield start, joined + line
        joined, start = "", None


# A pipe stage that may exit before it has read all its input: under
# `set -o pipefail` the writer then dies of SIGPIPE and the pipeline fails
# at random (grep -q/-l/-m stop at the first match, head at its count, sed's
# q command at its line).
EARLY_EXIT_READER = re.compile(
    r"(?<!\|)\|(?!\|)\s*(?:grep\b[^|;&]*\s(?:-[a-zA-Z]*[qlm](?![a-zA-Z])"
    r"|--(?:quiet|silent|max-count|files-with-matches))|head\b|sed\b[^|;&]*[0-9/]q\b)")


def test_scripts_exist():
    assert len(SCRIPTS) >= 8, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_pipe_into_a_reader_that_exits_early(script):
    found = [f"{script.relative_to(ROOT)}:{n}: {text.strip()}"
             for n, text in code_lines(script) if EARLY_EXIT_READER.search(text)]
    assert not found, ("capture the output first, then match it (see tools/sanitize.sh):\n"
                       + "\n".join(found))


def test_early_exit_pattern_catches_the_known_forms():
    for bad in ['ldd "$ext" | grep -q libasan || exit 1',
                'x=$(find . -name a | head -n 1)',
                'ffmpeg -encoders | grep -m1 x264',
                'ls | sed -n 1q', 'x | grep --quiet y']:
        assert EARLY_EXIT_READER.search(bad), bad
    for good in ['libs=$(ldd "$ext")', 'a || head -n 1 file', 'du -sh "$d" | cut -f1',
                 'sed -n "s/x/y/p" "$log" | tail -n 1', 'grep -q x "$file"']:
        assert not EARLY_EXIT_READER.search(good), good


def line_of(lines, pattern):
    for n, text in lines:
        if re.search(pattern, text):
            return n
    raise AssertionError(f"tools/test.sh has no line matching {pattern!r}")


def test_ffmpeg_is_built_before_any_test_that_needs_it():
    # The sanitizer run and the final pytest both run the filter tests.
    lines = list(code_lines(ROOT / "tools" / "test.sh"))
    build = line_of(lines, r"tools/build_ffmpeg\.sh")
    assert build < line_of(lines, r"tools/sanitize\.sh")
    assert build < line_of(lines, r"-m pytest")


def test_the_test_command_installs_python_packages_only_into_its_environment():
    lines = list(code_lines(ROOT / "tools" / "test.sh"))
    switched = line_of(lines, r'^PY="\$venv/bin/python"')
    for n, text in lines:
        if re.search(r"\bpip\b.*\binstall\b", text):
            assert n > switched and text.lstrip().startswith('"$PY" -m pip'), (n, text)
        assert "--break-system-packages" not in text and "--user" not in text, (n, text)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_script_changes_the_apt_configuration(script):
    for n, text in code_lines(script):
        assert not re.search(r"(tee|>)\s*\S*/etc/apt", text), f"{script.name}:{n}: {text}"


def test_the_cache_directory_is_the_one_everything_uses():
    text = (ROOT / "tools" / "test.sh").read_text()
    assert re.search(r"^export VMAFDNN_CACHE_DIR=", text, re.M)
    assert re.search(r"^export PIP_CACHE_DIR=", text, re.M)
    assert 'venv="$cache_root/envs/test"' in text


def test_clips_use_the_ffmpeg_the_test_command_names(tmp_path, monkeypatch):
    import clips

    fake = tmp_path / "ffmpeg"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("VMAFDNN_TEST_FFMPEG", str(fake))
    assert clips.ffmpeg() == str(fake)
    monkeypatch.setenv("VMAFDNN_TEST_FFMPEG", str(tmp_path / "missing"))
    with pytest.raises(pytest.fail.Exception, match="not an executable"):
        clips.ffmpeg()


def test_clips_fall_back_to_the_imageio_ffmpeg_binary(monkeypatch):
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    import clips

    monkeypatch.delenv("VMAFDNN_TEST_FFMPEG", raising=False)
    monkeypatch.delenv("IMAGEIO_FFMPEG_EXE", raising=False)
    assert clips.ffmpeg() == imageio_ffmpeg.get_ffmpeg_exe()
    assert os.access(clips.ffmpeg(), os.X_OK)
