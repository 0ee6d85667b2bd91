"""A Python snippet run as a child through the package's own launcher, as the package
runs generate.py: for tests of what the launcher gives its children."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Tuple


def run_reporting(code: str, tmp_path: Path, timeout: float = 60) -> Tuple[int, str, Path]:
    """Run ``python -c code REPORT`` in a scratch folder of the launcher; (its exit
    code, what it wrote to REPORT, the scratch folder it ran in, removed by now)."""
    from sphinxext_fmha.process.launch import run, scratch

    report = tmp_path / "report"
    with scratch("fmha-test-") as workdir:
        outcome = run([sys.executable, "-c", code, str(report)], cwd=tmp_path,
                      workdir=workdir, timeout=timeout)
    return outcome.returncode, report.read_text() if report.exists() else "", workdir
