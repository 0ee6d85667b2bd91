"""The release artefacts of this checkout: its sdist and wheel, built by ``python -m
build`` from a copy of the files git would ship (tracked, or new and not ignored), so
that the build writes nothing into the checkout. Shared by the release check and the
CK docs build, which installs the wheel as a CK maintainer would."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[2]


class Dists(NamedTuple):
    sdist: Path
    wheel: Path


def _shipped_files() -> list:
    if not (REPO / ".git").exists():
        raise AssertionError("the release check needs a git checkout (it ships git's files)")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, check=True).stdout
    return [name for name in listed.decode().split("\0") if name and (REPO / name).is_file()]


def build_dists(out: Path) -> Dists:
    """``python -m build`` of a copy of the checkout; the sdist and the wheel in ``out``."""
    source = out / "source"
    for name in _shipped_files():
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    dist = out / "dist"
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(source)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    (sdist,) = dist.glob("*.tar.gz")
    (wheel,) = dist.glob("*.whl")
    return Dists(sdist, wheel)
