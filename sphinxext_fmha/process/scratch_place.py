"""Where scratch folders go: a memory-backed folder (tmpfs) when the machine has one
with room, else the system's temporary folder.

Scratch folders hold files that live a few seconds: every filtered run a page checks
writes its kernel files in write mode and reads them back, and each probe's result (tens
of MB on a heavy tree) goes through a file. On a disk file system the kernel pays for
every file made and removed. Measured on ext4 over a virtual disk (2 cores): 2.8.3's
``generate.py -a bwd -o`` spent 4.3 s of system time there and 0.26 s in tmpfs; the
batch of its three checked filters 0.5 s against 0.16 s, for the same results.

The choice someone made is kept: ``TMPDIR``, ``TEMP`` or ``TMP`` set in the environment
(the tests set it to find what is left behind). Not :data:`tempfile.tempdir`: the first
call of :func:`tempfile.gettempdir` anywhere in the process sets it, chosen or not.
Otherwise, on Linux, ``/dev/shm`` is used when it is a tmpfs mount this process can write
to with at least :data:`MIN_FREE` bytes free: a container's default of 64 MB is too
small for a heavy tree's write mode, and filling it would fail whatever else uses it.
Scratch folders are removed in every case but SIGKILL (see :mod:`~.launch`); what a
killed build leaves there holds memory until it is removed or the machine restarts, as
it holds disk space in the system's temporary folder.

No Sphinx imports here.
"""

from __future__ import annotations

import functools
import os
from typing import Optional

__all__ = ["MEMORY_FOLDER", "MIN_FREE", "scratch_parent"]

#: The memory-backed folder most Linux systems mount.
MEMORY_FOLDER = "/dev/shm"

#: Free bytes the memory folder must have: many times a heavy tree's whole write mode
#: (2.8.3's ``bwd`` writes 52 MB of kernel sources), the rare run that needs it.
MIN_FREE = 1 << 30

_CHOSEN = ("TMPDIR", "TEMP", "TMP")


def scratch_parent() -> Optional[str]:
    """The folder to make scratch folders in, or None for the system's temporary folder
    (what :func:`tempfile.mkdtemp` picks: the environment's choice, or its default)."""
    if any(os.environ.get(var) for var in _CHOSEN):
        return None
    if not _is_tmpfs(MEMORY_FOLDER) or not os.access(MEMORY_FOLDER, os.W_OK | os.X_OK):
        return None
    try:
        stats = os.statvfs(MEMORY_FOLDER)
    except OSError:
        return None
    return MEMORY_FOLDER if stats.f_bavail * stats.f_frsize >= MIN_FREE else None


@functools.cache
def _is_tmpfs(folder: str) -> bool:
    """Whether ``folder`` is the mount point of a tmpfs (``/proc/self/mounts``; False
    where there is none, as on macOS and Windows)."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            return any(fields[1] == folder and fields[2] == "tmpfs"
                       for fields in (line.split() for line in mounts) if len(fields) > 2)
    except OSError:
        return False
