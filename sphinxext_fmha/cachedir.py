"""Where sphinxext-fmha keeps what it downloads and computes, and how processes
sharing that place take turns."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator


def cache_root() -> Path:
    """``$FMHA_CACHE_DIR`` if set, else ``~/.cache/sphinxext-fmha``."""
    env = os.environ.get("FMHA_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "sphinxext-fmha"


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive inter-process lock (fcntl.flock)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
