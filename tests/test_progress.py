"""Progress: one line per expensive step in a normal sphinx-build, none with -q, and
the same lines from the CLI on a terminal (synthetic trees: fast)."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

from sphinxext_fmha.cli import main

from helpers.synthetic import EXPECTED_COUNTS

STEP = re.compile(r"^fmha: toy of (?P<tree>\S+): (?P<what>.+?)(?: \((?P<n>[\d,]+) kernels\))?"
                  r"\.\.\. \d+\.\d s$")


def _project(src: Path, root: Path, cache: Path) -> Path:
    src.mkdir()
    (src / "conf.py").write_text(
        'extensions = ["sphinxext_fmha"]\nproject = "p"\n'
        "fmha_ck_root = %r\nfmha_cache_dir = %r\n" % (str(root), str(cache)), encoding="utf-8")
    (src / "index.rst").write_text("Guide\n=====\n\n.. fmha-kernel-guide:: toy\n",
                                   encoding="utf-8")
    return src


def _sphinx(src: Path, out: Path, *flags: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", *flags, str(src), str(out)],
                          capture_output=True, text=True, check=True,
                          env=dict(os.environ, NO_COLOR="1"))
    return proc.stdout


def _steps(text: str):
    return [m for m in (STEP.match(line.strip()) for line in text.splitlines()) if m]


def test_sphinx_build_shows_each_expensive_step_once(synthetic_tree, tmp_path):
    root = synthetic_tree("base")
    src = _project(tmp_path / "src", root, tmp_path / "cache")
    steps = _steps(_sphinx(src, tmp_path / "out"))
    whats = [m["what"] for m in steps]
    # steps started ahead of the page finish in any order
    probe = [m for m in steps if m["what"] == "probing generate.py"]
    assert len(probe) == 1, whats
    # the listing's kernel files: its lines without the API dispatch file
    assert int(probe[0]["n"].replace(",", "")) == EXPECTED_COUNTS["base"]["toy"] - 1
    assert len(whats) == len(set(whats)), whats  # each step once
    # the steps started ahead say so once they have all finished, in the same style
    ahead = [w for w in whats if w.startswith("started ahead of the pages")]
    assert ahead == ["started ahead of the pages, 2 at a time: 1 probe"], whats
    assert "generate.py -l -m generic" not in whats  # the probe lists the other mask mode
    # a warm -E rebuild runs nothing, so it reports nothing
    assert _steps(_sphinx(src, tmp_path / "out", "-E")) == []


def test_quiet_sphinx_build_shows_no_step(synthetic_tree, tmp_path):
    root = synthetic_tree("base")
    src = _project(tmp_path / "src", root, tmp_path / "cache")
    out = _sphinx(src, tmp_path / "out", "-q")
    assert "fmha:" not in out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_cli_shows_steps_on_a_terminal_only(synthetic_tree, tmp_path, monkeypatch, capsys):
    root = synthetic_tree("base")
    argv = ["analyze", "--ck-root", str(root), "--api", "toy", "--format", "json"]
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(argv + ["--cache-dir", str(tmp_path / "a")]) == 0
    steps = _steps(terminal.getvalue())
    assert [m["what"] for m in steps] == ["probing generate.py"]
    monkeypatch.undo()
    capsys.readouterr()
    assert main(argv + ["--cache-dir", str(tmp_path / "b")]) == 0
    assert "fmha:" not in capsys.readouterr().err
