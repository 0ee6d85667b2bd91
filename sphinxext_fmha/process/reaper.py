"""Every process a run started ends with the run, and everything ends with us.

* Each run gets a mark (:func:`new_mark`) that the launcher puts in its child's
  environment, where everything the child starts inherits it: what the run leaves
  behind is found by the mark (:func:`leftovers`), even a grandchild that called
  ``setsid()`` and whose parent already exited, which no process group and no walk
  down the process tree reaches any more.
* A watchdog process (``watchdog_script.py``, started with the first child) ends
  them all when this process dies without cleaning up: a SIGKILL, the OOM killer, a CI
  runner's hard timeout. It reads registrations from a pipe only this process writes:
  when the pipe ends or this process is no longer its parent, it kills every process
  with one of our marks, the process groups still registered, and removes the scratch
  folders still registered. Its own session keeps it out of a kill of our process group.

Not a parent-death signal (``PR_SET_PDEATHSIG``): it is sent when the *thread* that
started the child ends (our children are started from pool threads), it must be set
in the child between fork and exec (``preexec_fn``, unsafe with threads, and a fork of
the whole process instead of a vfork), and it does not reach the child's own children.

Linux finds marked processes in ``/proc``; elsewhere only the registered process groups
are ended. No Sphinx imports here.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import watchdog_script
from .watchdog_script import MARKS, kill, processes, start_time

__all__ = ["MARKS", "folder_made", "folder_removed", "group_ended", "group_started", "kill",
           "leftovers", "marked_environment", "new_mark", "start_time"]

WATCHDOG_SCRIPT = Path(watchdog_script.__file__)

_COUNTER = itertools.count(1)
_LOCK = threading.Lock()
#: "token": every mark this process makes starts with it, and its watchdog ends every
#: process whose marks do; "fd": the write end of the watchdog's pipe (None where it
#: cannot run); "pid": the watchdog's. A fork (Sphinx's parallel readers) keeps them
#: all: its children are ended with ours. A fork of a process that had no watchdog yet
#: starts one of its own, with a token of its own.
_STATE: Dict[str, Any] = {}
#: The watchdog's Popen, never waited for: it ends after us.
_KEEP: List[subprocess.Popen[bytes]] = []


def new_mark() -> str:
    """A mark for one run, unique among the runs of every process."""
    return "%s/%d/%d" % (_watchdog()[0], os.getpid(), next(_COUNTER))


def marked_environment(env: Mapping[str, str], mark: str) -> Dict[str, str]:
    """``env`` with ``mark`` added to the marks it carries (a worker interpreter's
    children keep the mark of the run that started the worker, too)."""
    marked = dict(env)
    marked[MARKS] = " ".join(marked.get(MARKS, "").split() + [mark])
    return marked


def leftovers(mark: str, since: int = 0, below: Optional[int] = None) -> List[int]:
    """The live processes of the run ``mark`` (started ``since``, see
    :func:`~.watchdog_script.start_time`), and everything below ``below`` (the run's
    child while it lives: a process that cleared its environment is found there)."""
    return processes(mark.__eq__, roots=[below] if below is not None else [], since=since)


# --------------------------------------------------------------------------- watchdog


def _send(record: List[object]) -> None:
    """One registration: one write below the pipe's atomic size, so lines from threads
    and forks never interleave."""
    fd = _watchdog()[1]
    if fd is None:
        return
    try:
        os.write(fd, json.dumps(record).encode("utf-8") + b"\n")
    except OSError:  # the watchdog is gone: nothing to tell
        pass


def group_started(group: int) -> None:
    _send(["group", group])


def group_ended(group: int) -> None:
    _send(["ended", group])


def folder_made(path: str) -> None:
    _send(["folder", path])


def folder_removed(path: str) -> None:
    _send(["removed", path])


def _watchdog() -> Tuple[str, Optional[int]]:
    """(this process's token, the write end of its watchdog's pipe or None), the
    watchdog started on first use."""
    with _LOCK:
        if "token" not in _STATE:
            _STATE.update(token=os.urandom(6).hex(), fd=None, pid=None)
            _STATE["fd"] = _start_watchdog(_STATE["token"])
        return _STATE["token"], _STATE["fd"]


def _start_watchdog(token: str) -> Optional[int]:
    if not sys.executable:  # an embedded interpreter: nothing to run it with
        return None
    try:
        watchdog = subprocess.Popen(
            [sys.executable, "-I", "-S", str(WATCHDOG_SCRIPT), token, str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            cwd="/", start_new_session=True, close_fds=True)
    except OSError:
        return None
    assert watchdog.stdin is not None
    # the raw descriptor (not inherited by children): each write one system call
    fd = os.dup(watchdog.stdin.fileno())
    watchdog.stdin.close()
    _STATE["pid"] = watchdog.pid
    _KEEP.append(watchdog)
    return fd
