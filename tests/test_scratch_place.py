"""Scratch folders in memory where the machine has room (process/scratch_place.py).

The oracle for "is there a usable memory folder" is written here: regexes over the
mount table and ``/proc/meminfo``, ``os.statvfs`` and ``os.access``.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest

from sphinxext_fmha.process import scratch_place
from sphinxext_fmha.process.launch import scratch

from helpers.launched import run_reporting

CHOSEN = ("TMPDIR", "TEMP", "TMP")


def _memory_folder_usable() -> bool:
    try:
        mounts = Path("/proc/self/mounts").read_text(encoding="utf-8", errors="replace")
        meminfo = Path("/proc/meminfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    kinds = re.findall(r"^\S+ /dev/shm (\S+) ", mounts, re.MULTILINE)
    if not kinds or kinds[-1] != "tmpfs" or not os.access("/dev/shm", os.W_OK | os.X_OK):
        return False
    stats = os.statvfs("/dev/shm")
    available = re.search(r"^MemAvailable:\s+(\d+) kB", meminfo, re.MULTILINE)
    return (stats.f_bavail * stats.f_frsize >= scratch_place.MIN_FREE
            and available is not None and int(available.group(1)) * 1024 >= scratch_place.MIN_FREE)


@pytest.fixture
def memory_folder(monkeypatch, tmp_path):
    """A stand-in memory folder that passes every check: the branch that picks it runs
    on any machine (macOS, a container with a 64 MB /dev/shm)."""
    folder = tmp_path / "shm"
    folder.mkdir()
    monkeypatch.setattr(scratch_place, "MEMORY_FOLDER", str(folder))
    monkeypatch.setattr(scratch_place, "_is_tmpfs", lambda path: path == str(folder))
    monkeypatch.setattr(scratch_place, "MIN_FREE", 0)
    return folder


@pytest.fixture
def unchosen(monkeypatch, tmp_path):
    """No temporary folder chosen by anyone: the environment's and tempfile's unset
    (after ``tmp_path`` is made: making it sets tempfile's)."""
    for var in CHOSEN:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)


def test_memory_folder_when_it_is_a_tmpfs_with_room(unchosen):
    expected = "/dev/shm" if _memory_folder_usable() else None
    assert scratch_place.scratch_parent() == expected


def test_scratch_folders_go_to_the_memory_folder(unchosen, memory_folder):
    assert scratch_place.scratch_parent() == str(memory_folder)
    with scratch("fmha-test-") as workdir:
        assert workdir.parent == memory_folder and workdir.is_dir()
    assert not workdir.exists()


@pytest.mark.parametrize("var", CHOSEN)
def test_a_chosen_temporary_folder_is_kept(unchosen, memory_folder, monkeypatch, tmp_path,
                                           var):
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    monkeypatch.setenv(var, str(chosen))
    assert scratch_place.scratch_parent() is None
    with scratch("fmha-test-") as workdir:
        assert workdir.parent == chosen
    assert not workdir.exists()


def test_tempfile_s_cached_default_is_not_a_choice(unchosen, memory_folder):
    """Any ``tempfile`` call without a folder caches the default in ``tempfile.tempdir``
    (pytest's ``tmp_path`` does): that must not turn the memory folder off."""
    tempfile.gettempdir()
    assert tempfile.tempdir is not None
    assert scratch_place.scratch_parent() == str(memory_folder)


def test_too_little_room_or_memory_means_the_system_s_folder(unchosen, memory_folder,
                                                              monkeypatch):
    monkeypatch.setattr(scratch_place, "MIN_FREE", 1 << 62)  # more than any machine has
    assert scratch_place.scratch_parent() is None
    monkeypatch.setattr(scratch_place, "MIN_FREE", 0)
    monkeypatch.setattr(scratch_place, "_available_memory", lambda: -1)
    assert scratch_place.scratch_parent() is None


def test_a_folder_that_is_not_a_tmpfs_is_not_used(unchosen, monkeypatch, tmp_path):
    monkeypatch.setattr(scratch_place, "MIN_FREE", 0)
    monkeypatch.setattr(scratch_place, "MEMORY_FOLDER", str(tmp_path))  # a plain folder
    assert scratch_place.scratch_parent() is None


@pytest.mark.skipif(not _memory_folder_usable(), reason="no tmpfs /dev/shm with room here")
def test_children_s_temporary_files_go_to_memory_and_leave_nothing(unchosen, tmp_path):
    """A child started by the launcher makes its temporary files inside its scratch
    folder, in memory; nothing of either is left once the run is over. (Only this run's
    folder is looked for: other processes, another test worker among them, make their
    own there meanwhile.)"""
    code = ("import sys, tempfile\n"
            "with tempfile.TemporaryDirectory() as made:\n"
            "    open(sys.argv[1], 'w').write(made)\n")
    returncode, report, workdir = run_reporting(code, tmp_path)
    assert returncode == 0
    made = Path(report)
    assert made.parent == workdir / "tmp" and workdir.parent == Path("/dev/shm")
    assert not workdir.exists()
