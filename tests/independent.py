"""An independent `generate.py -l` run, the yardstick the tests measure against: a plain
child process (the tests' launcher twin), no cache and nothing of sphinxext_fmha in
between."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Set

from sphinxext_fmha.locate import fmha_dir

from launch_twin import run_child


def independent_listing(root: Path, api: str, tmp: Path, *args: str) -> Set[str]:
    """Kernel file names (the API dispatch file left out) that generate.py lists."""
    out = tmp / "independent.txt"
    ran = run_child([sys.executable, "-B", "generate.py", "-a", api, *args, "-l", str(out)],
                    cwd=fmha_dir(root), timeout=1200,
                    env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    if ran.returncode != 0:
        raise AssertionError("independent listing failed (%s):\n%s" % (ran.returncode,
                                                                       ran.stderr[-3000:]))
    names = {Path(line.strip()).name for line in out.read_text().splitlines() if line.strip()}
    return {n for n in names if not n.endswith("_api.cpp")}
