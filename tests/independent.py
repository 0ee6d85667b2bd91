"""An independent `generate.py -l` run, the yardstick the tests measure against: a plain
subprocess, no cache and nothing of sphinxext_fmha in between."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Set

from sphinxext_fmha.locate import fmha_dir


def independent_listing(root: Path, api: str, tmp: Path, *args: str) -> Set[str]:
    """Kernel file names (the API dispatch file left out) that generate.py lists."""
    out = tmp / "independent.txt"
    subprocess.run([sys.executable, "-B", "generate.py", "-a", api, *args, "-l", str(out)],
                   cwd=fmha_dir(root), check=True, capture_output=True,
                   env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    names = {Path(line.strip()).name for line in out.read_text().splitlines() if line.strip()}
    return {n for n in names if not n.endswith("_api.cpp")}
