"""Building large results without the cyclic garbage collector's passes over them (they
free nothing: the results survive), and skipping its last pass at exit. Why it is safe:
``docs/internals.md``. Kept because measured (issue 42, ``benchmarks/bench_build.py``, the
cold flash-attn 2.8.3 gallery, two rounds): the cold build's CPU 49.8 s with these pauses,
58.0 s without (55.3-60.8 s): 14 % saved, over the 10 % that keeps a trick.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import os
import threading
from typing import Iterator

__all__ = ["collector_paused", "freeze_at_exit"]

_lock = threading.Lock()
#: blocks paused now, in all threads; whether the collector ran before the first of them
_paused = 0
_resume = False


def _new_lock_in_child() -> None:
    # a child forked while another thread held the lock would wait on it forever
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_new_lock_in_child)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause automatic collection for the block; nested and concurrent blocks share the
    pause: the collector resumes when the last ends, if it ran before the first began."""
    global _paused, _resume
    with _lock:
        if _paused == 0:
            _resume = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _resume:
                # what the pause left alive counts as old (the oldest generation) in two list
                # splices, unless someone froze objects on purpose (docs/internals.md)
                if not gc.get_freeze_count():
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()


@functools.cache  # (registered once per process)
def freeze_at_exit() -> None:
    """Let the interpreter's last collection skip what is alive at exit."""
    atexit.register(gc.freeze)
