"""Where sphinxext-fmha keeps what it downloads and computes, and how processes
sharing that place take turns."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None  # type: ignore[assignment]


def cache_root() -> Path:
    """``$FMHA_CACHE_DIR`` if set, else ``~/.cache/sphinxext-fmha``."""
    env = os.environ.get("FMHA_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "sphinxext-fmha"


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive inter-process lock (fcntl.flock); a no-op where fcntl is missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover - non-POSIX
        yield
        return
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
