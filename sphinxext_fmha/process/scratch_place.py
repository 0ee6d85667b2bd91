"""Where scratch folders go: the system's temporary folder (``TMPDIR`` and the like), or
another one with room when it has less than :data:`LOW_FREE` free. Why not ``/dev/shm``
(6 % of CPU, under the 10 % that keeps a trick): ``docs/internals.md``. No Sphinx imports.
"""

from __future__ import annotations

import os
from typing import Optional

from ..errors import WarningType
from .notices import notice

__all__ = ["LOW_FREE", "TEMP_VARIABLES", "free_space", "free_space_note", "scratch_parent"]

#: Free bytes below which a chosen temporary folder is passed over: a heavy tree's
#: write mode writes 52 MB of kernel sources there (2.8.3's ``bwd``).
LOW_FREE = 64 << 20

#: The variables :mod:`tempfile` reads the temporary folder from, in its order.
TEMP_VARIABLES = ("TMPDIR", "TEMP", "TMP")

#: The system's usual temporary folders (:mod:`tempfile`'s own list on POSIX).
_USUAL = ("/tmp", "/var/tmp", "/usr/tmp")


def scratch_parent() -> Optional[str]:
    """The folder to make scratch folders in, or None for what :func:`tempfile.mkdtemp`
    picks (not :data:`tempfile.tempdir`, which :func:`tempfile.gettempdir` sets anyway)."""
    variable = next((var for var in TEMP_VARIABLES if os.environ.get(var)), None)
    room = free_space(os.environ[variable]) if variable is not None else None
    if variable is None or room is None or room >= LOW_FREE:
        return None
    chosen = os.environ[variable]
    other = next((folder for folder in _USUAL if _roomy_elsewhere(folder, chosen)), None)
    instead = ("scratch folders go to %s instead" % other if other is not None
               else "no other temporary folder has room; runs may fail")
    notice(WarningType.CONFIG, "the temporary folder %s (%s) has %s free: %s"
           % (chosen, variable, _size(room), instead), subject=chosen)
    return other


def free_space(folder: str) -> Optional[int]:
    """Bytes free to us in ``folder``'s file system, or None when unknown."""
    try:
        stats = os.statvfs(folder)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize


def free_space_note(folder: str) -> str:
    """What a failure message adds when ``folder``'s file system is nearly full (its
    writes, a child's standard error among them, may have failed), else ''."""
    room = free_space(folder)
    if room is None or room >= LOW_FREE:
        return ""
    return "; the scratch folder %s has only %s free (TMPDIR sets where they go)" % (
        folder, _size(room))


def _size(count: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= scale:
            return "%.1f %s" % (count / scale, unit)
    return "%d bytes" % count


def _roomy_elsewhere(folder: str, chosen: str) -> bool:
    """Whether ``folder`` is a writable folder with room on another file system."""
    try:
        if os.stat(folder).st_dev == os.stat(chosen).st_dev:
            return False
    except OSError:
        pass  # the chosen one may not even exist
    room = free_space(folder)
    return (room is not None and room >= LOW_FREE and os.path.isdir(folder)
            and os.access(folder, os.W_OK | os.X_OK))
