"""Where scratch folders go: a memory-backed folder (tmpfs) when the machine has one
with room in it and memory to spare, else the system's temporary folder.

Scratch folders hold files that live a few seconds: every filtered run a page checks
writes its kernel files in write mode and reads them back, and each probe's result (tens
of MB on a heavy tree) goes through a file. On a disk file system the kernel pays for
every file made and removed. Measured on ext4 over a virtual disk (2 cores): 2.8.3's
``generate.py -a bwd -o`` spent 4.3 s of system time there and 0.26 s in tmpfs; the
batch of its three checked filters 0.5 s against 0.16 s, for the same results.

The choice someone made is kept: ``TMPDIR``, ``TEMP`` or ``TMP`` set in the environment
(the tests set it to find what is left behind; set it to keep scratch folders on disk),
unless its file system has less than :data:`LOW_FREE` bytes free: then the memory folder
or the system's usual temporary folder is used when one has room, with one warning that
names the chosen folder and its free space.
Not :data:`tempfile.tempdir`: the first call of :func:`tempfile.gettempdir` anywhere in
the process sets it, chosen or not. Otherwise, on Linux, ``/dev/shm`` is used when it is
a tmpfs mount this process can write to, with at least :data:`MIN_FREE` bytes free in it
and as much memory available (``MemAvailable``: a tmpfs's size limit says nothing of the
memory its files take, and in a container they count against its memory limit). A
container's default ``/dev/shm`` of 64 MB is too small for a heavy tree's write mode, and
filling it would fail whatever else uses it.

Scratch folders are removed when the work ends, fails or is interrupted (SIGINT,
SIGTERM; see :mod:`~.launch`). A process that dies otherwise (SIGKILL, a crash) leaves
them behind, holding memory here until they are removed or the machine restarts, as
they would hold disk space in the system's temporary folder. Where systemd-logind
removes a user's ``/dev/shm`` files when the user's last session ends (``RemoveIPC``),
a build left running after logging out loses its scratch folders and its runs fail:
set ``TMPDIR`` for such a build.

No Sphinx imports here.
"""

from __future__ import annotations

import functools
import os
from typing import Optional

from ..errors import WarningType
from .notices import notice

__all__ = ["LOW_FREE", "MEMORY_FOLDER", "MIN_FREE", "TEMP_VARIABLES", "free_space",
           "free_space_note", "scratch_parent"]

#: The memory-backed folder most Linux systems mount.
MEMORY_FOLDER = "/dev/shm"

#: Free bytes the memory folder must have: many times a heavy tree's whole write mode
#: (2.8.3's ``bwd`` writes 52 MB of kernel sources), the rare run that needs it.
MIN_FREE = 1 << 30

#: Free bytes below which a chosen temporary folder is passed over: a heavy tree's
#: write mode writes 52 MB of kernel sources there (2.8.3's ``bwd``).
LOW_FREE = 64 << 20

#: The variables :mod:`tempfile` reads the temporary folder from, in its order.
TEMP_VARIABLES = ("TMPDIR", "TEMP", "TMP")

#: The system's usual temporary folders (:mod:`tempfile`'s own list on POSIX).
_USUAL = ("/tmp", "/var/tmp", "/usr/tmp")


def scratch_parent() -> Optional[str]:
    """The folder to make scratch folders in, or None for the system's temporary folder
    (what :func:`tempfile.mkdtemp` picks: the environment's choice, or its default)."""
    chosen = next((os.environ[var] for var in TEMP_VARIABLES if os.environ.get(var)), None)
    if chosen is not None:
        room = free_space(chosen)
        if room is None or room >= LOW_FREE:
            return None
        other = next((folder for folder in ([MEMORY_FOLDER] if _memory_usable() else [])
                      + list(_USUAL) if _roomy_elsewhere(folder, chosen)), None)
        instead = ("scratch folders go to %s instead" % other if other is not None
                   else "no other temporary folder has room; runs may fail")
        notice(WarningType.CONFIG, "the temporary folder %s (%s) has %s free: %s"
               % (chosen, _variable_of(chosen), _size(room), instead), subject=chosen)
        return other
    return MEMORY_FOLDER if _memory_usable() else None


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


def _variable_of(folder: str) -> str:
    return next(var for var in TEMP_VARIABLES if os.environ.get(var) == folder)


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


def _memory_usable() -> bool:
    if not _is_tmpfs(MEMORY_FOLDER) or not os.access(MEMORY_FOLDER, os.W_OK | os.X_OK):
        return False
    room = free_space(MEMORY_FOLDER)
    return room is not None and room >= MIN_FREE and _available_memory() >= MIN_FREE


def _available_memory() -> int:
    """Bytes of memory available without swapping (``MemAvailable`` of
    ``/proc/meminfo``); 0 when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii", errors="replace") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # given in kB
    except (OSError, ValueError, IndexError):
        pass
    return 0


@functools.cache
def _is_tmpfs(folder: str) -> bool:
    """Whether ``folder`` is the mount point of a tmpfs (``/proc/self/mounts``, whose last
    mount at a point is the one seen there; False where there is none, as on macOS and
    Windows)."""
    kind = None
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) > 2 and fields[1] == folder:
                    kind = fields[2]
    except OSError:
        return False
    return kind == "tmpfs"
