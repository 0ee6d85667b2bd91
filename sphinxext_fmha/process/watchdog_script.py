"""Find every process of a run (:func:`processes`, :func:`kill`: used by :mod:`~.launch`),
and, run as ``watchdog_script.py TOKEN OWNER_PID``, end them and remove their scratch
folders when the owner dies. Standard library only; protocol: ``docs/internals.md``.
"""

import contextlib
import json
import os
import select
import shutil
import signal
import sys
import time

#: The environment variable that carries a process's run marks, space-separated.
MARKS = "SPHINXEXT_FMHA_RUNS"
_NEEDLE = b"\0" + MARKS.encode() + b"="


def _stat(pid):
    """(parent pid, start time in clock ticks since boot, state) of ``pid``, or None."""
    try:
        with open("/proc/%s/stat" % pid, "rb") as handle:
            stat = handle.read()
        # "pid (command) state ppid pgrp session tty tpgid flags minflt cminflt majflt
        # cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime"
        fields = stat[stat.rindex(b")") + 2:].split()
        return int(fields[1]), int(fields[19]), fields[0]
    except (OSError, ValueError, IndexError):
        return None


def _marks(pid):
    """The run marks in ``pid``'s environment (as it was when it started)."""
    try:
        with open("/proc/%s/environ" % pid, "rb") as handle:
            environ = b"\0" + handle.read()
    except OSError:
        return []
    start = environ.find(_NEEDLE)
    if start < 0:
        return []
    start += len(_NEEDLE)
    end = environ.find(b"\0", start)
    return environ[start:end if end >= 0 else len(environ)].decode("utf-8", "replace").split()


def start_time(pid):
    """When ``pid`` started, in clock ticks since boot (0 when unknown): a process of
    its run started no earlier, so older processes need not be looked at."""
    found = _stat(pid)
    return found[1] if found else 0


def processes(wanted, roots=(), since=0):
    """The live processes (pids) that carry a mark ``wanted(mark)`` accepts and are not
    older than ``since`` (see :func:`start_time`), and every process below one of
    ``roots`` (live processes whose children are looked for by parent pid); never this
    process. Empty where there is no ``/proc``."""
    try:
        entries = [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return []
    me, children, found = os.getpid(), {}, set()
    for pid in entries:
        stat = _stat(pid)
        if stat is None or pid == me:
            continue
        children.setdefault(stat[0], []).append(pid)
        if stat[1] >= since and any(wanted(mark) for mark in _marks(pid)):
            found.add(pid)
    todo = list(roots) + list(found)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return sorted(found)


def kill(pids, groups=()):
    """SIGKILL ``pids``, then the process groups they lead or belong to and ``groups``
    (a process one of them forks after the look at ``/proc`` is in such a group); never
    the group of this process."""
    every = set(groups)
    for pid in pids:
        with contextlib.suppress(OSError):
            every.add(os.getpgid(pid))
    every.discard(os.getpgrp())
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for group in every:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)


def _running(pid):
    """Whether ``pid`` still runs (a zombie does not: it only waits to be reaped)."""
    stat = _stat(pid)
    return stat is not None and stat[2] not in (b"Z", b"X")


def _remove(folders, pids, patience=5.0):
    """Remove ``folders`` once ``pids`` stopped running (a process just killed may
    still write there until its CPU sees the signal), within ``patience`` seconds."""
    deadline = time.monotonic() + patience
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.01)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def watch(token, owner, stream):
    """Read the owner's registrations from ``stream`` (a file descriptor) until it ends
    or the owner is gone; then end everything that is left."""
    groups, folders = set(), set()
    pending = b""
    alive = True
    while alive:
        alive = os.getppid() == owner
        # Once the owner is gone, what it wrote is still read, without waiting: on a loaded
        # machine it can die before this interpreter has read its first line.
        ready, _, _ = select.select([stream], [], [], 1.0 if alive else 0)
        if not ready:
            continue
        data = os.read(stream, 65536)
        if not data:
            break
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            try:
                what, value = json.loads(line)
            except ValueError:
                continue
            {"group": groups.add, "ended": groups.discard, "folder": folders.add,
             "removed": folders.discard}.get(what, lambda value: None)(value)
    prefix = token + "/"
    found = processes(lambda mark: mark.startswith(prefix), roots=groups)
    kill(found, groups)
    _remove(folders, found + list(groups))


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is for the owner: it cleans up
    watch(sys.argv[1], int(sys.argv[2]), sys.stdin.fileno())
