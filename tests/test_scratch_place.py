"""Where scratch folders go (process/scratch_place.py): the system's temporary folder,
or the one the environment chose; nothing left behind. (A chosen folder without room:
tests/test_faults.py.)"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from sphinxext_fmha.process import scratch_place
from sphinxext_fmha.process.launch import scratch

from helpers.launched import run_reporting

CHOSEN = ("TMPDIR", "TEMP", "TMP")


@pytest.fixture
def unchosen(monkeypatch, tmp_path):
    """No temporary folder chosen by anyone: the environment's and tempfile's unset
    (after ``tmp_path`` is made: making it sets tempfile's)."""
    for var in CHOSEN:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)


def test_scratch_folders_go_to_the_system_s_temporary_folder(unchosen):
    assert scratch_place.scratch_parent() is None
    with scratch("fmha-test-") as workdir:
        assert workdir.parent == Path(tempfile.gettempdir()) and workdir.is_dir()
    assert not workdir.exists()


@pytest.mark.parametrize("var", CHOSEN)
def test_a_chosen_temporary_folder_is_kept(unchosen, monkeypatch, tmp_path, var):
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    monkeypatch.setenv(var, str(chosen))
    assert scratch_place.scratch_parent() is None
    with scratch("fmha-test-") as workdir:
        assert workdir.parent == chosen
    assert not workdir.exists()


def test_children_s_temporary_files_go_to_their_scratch_folder_and_leave_nothing(tmp_path):
    """A child started by the launcher makes its temporary files inside its scratch
    folder; nothing of either is left once the run is over."""
    code = ("import sys, tempfile\n"
            "with tempfile.TemporaryDirectory() as made:\n"
            "    open(sys.argv[1], 'w').write(made)\n")
    returncode, report, workdir = run_reporting(code, tmp_path)
    assert returncode == 0
    assert Path(report).parent == workdir / "tmp"
    assert not workdir.exists()
