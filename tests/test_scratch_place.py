"""Scratch folders in memory where the machine has room (process/scratch_place.py).

The oracle for "is there a usable memory folder" is written here: a regex over the
mount table, ``os.statvfs`` and ``os.access``.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

import pytest

from sphinxext_fmha.process import scratch_place
from sphinxext_fmha.process.launch import scratch

from launched import run_reporting

CHOSEN = ("TMPDIR", "TEMP", "TMP")


def _memory_folder_usable() -> bool:
    try:
        mounts = Path("/proc/self/mounts").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if not re.search(r"^\S+ /dev/shm tmpfs ", mounts, re.MULTILINE):
        return False
    if not os.access("/dev/shm", os.W_OK | os.X_OK):
        return False
    stats = os.statvfs("/dev/shm")
    return stats.f_bavail * stats.f_frsize >= scratch_place.MIN_FREE


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


@pytest.mark.parametrize("var", CHOSEN)
def test_a_chosen_temporary_folder_is_kept(unchosen, monkeypatch, tmp_path, var):
    monkeypatch.setenv(var, str(tmp_path))
    assert scratch_place.scratch_parent() is None
    with scratch("fmha-test-") as workdir:
        if var == "TMPDIR" or sys.platform == "win32":  # what tempfile reads on this system
            assert workdir.parent == tmp_path
    assert not workdir.exists()


def test_tempfile_s_cached_default_is_not_a_choice(unchosen):
    """Any ``tempfile`` call without a folder caches the default in ``tempfile.tempdir``
    (pytest's ``tmp_path`` does): that must not turn the memory folder off."""
    tempfile.gettempdir()
    assert tempfile.tempdir is not None
    expected = "/dev/shm" if _memory_folder_usable() else None
    assert scratch_place.scratch_parent() == expected


def test_too_little_room_or_not_a_tmpfs_means_the_system_s_folder(unchosen, monkeypatch,
                                                                     tmp_path):
    monkeypatch.setattr(scratch_place, "MIN_FREE", 1 << 62)  # more than any machine has
    assert scratch_place.scratch_parent() is None
    monkeypatch.setattr(scratch_place, "MIN_FREE", 0)
    monkeypatch.setattr(scratch_place, "MEMORY_FOLDER", str(tmp_path))  # a plain folder
    assert scratch_place.scratch_parent() is None


@pytest.mark.skipif(not _memory_folder_usable(), reason="no tmpfs /dev/shm with room here")
def test_children_s_temporary_files_go_to_memory_and_leave_nothing(unchosen, tmp_path):
    """A child started by the launcher makes its temporary files inside its scratch
    folder, in memory; nothing of either is left once the run is over."""
    before = set(os.listdir("/dev/shm"))
    code = ("import sys, tempfile\n"
            "with tempfile.TemporaryDirectory() as made:\n"
            "    open(sys.argv[1], 'w').write(made)\n")
    returncode, report, workdir = run_reporting(code, tmp_path)
    assert returncode == 0
    made = Path(report)
    assert made.parent == workdir / "tmp" and workdir.parent == Path("/dev/shm")
    assert not workdir.exists()
    assert not {n for n in set(os.listdir("/dev/shm")) - before if n.startswith("fmha-")}
