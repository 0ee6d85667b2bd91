"""The GIL back within a millisecond for threads that mostly wait for children.

This package's background threads (work started ahead of the pages, a page's own
filtered runs, a probe's hand-over) spend their time waiting for child processes, and
between two waits make a few hundred system calls: start a child, read its result, keep
it in the cache. Each call releases the GIL, and getting it back from a main thread that
computes (a page's analysis, pure Python) takes a whole switch interval, 5 ms by default:
CPython's "convoy effect". In a cold build of flash-attn 2.8.3's six guides, while the
reader analysed ``bwd``, the ahead thread took 1.35 s instead of 0.1 s to start the
first worker interpreter, and a core stayed idle meanwhile. With a 1 ms interval while
such threads run (a build's reading, a CLI command), cold builds of that gallery took
14.0, 15.3 and 15.1 s against 16.0, 16.7 and 16.3 s without, side by side
(``benchmarks/bench_build.py``, three rounds).

The computing thread loses nothing measurable: a switch happens only when another
thread asks for the GIL, and a thread that waits (in ``waitpid``, ``read``, on a lock)
does not ask.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Callable, Iterator, List, Optional

__all__ = ["SWITCH_INTERVAL", "lower_switch_interval", "quick_handoffs"]

#: seconds a thread that asks for the GIL waits before the holder must let it go
SWITCH_INTERVAL = 0.001

_lock = threading.Lock()
#: holders of the lowered interval now, in all threads
_holders = 0
#: the interval before the first of them, when they shortened it
_before: Optional[float] = None


def lower_switch_interval() -> Callable[[], None]:
    """Lower the interval (never raise it) until the returned call ends this hold;
    nested and concurrent holds share it, and the last one to end restores the interval
    found by the first. Ending a hold twice ends it once."""
    global _holders, _before
    with _lock:
        if _holders == 0:
            before = sys.getswitchinterval()
            # set only when it shortens it (a value set again can come back a
            # microsecond shorter: CPython keeps whole microseconds)
            _before = before if before > SWITCH_INTERVAL else None
            if _before is not None:
                sys.setswitchinterval(SWITCH_INTERVAL)
        _holders += 1
    ended: List[bool] = []

    def end() -> None:
        global _holders, _before
        with _lock:
            if ended:
                return
            ended.append(True)
            _holders -= 1
            if _holders == 0 and _before is not None:
                sys.setswitchinterval(_before)
                _before = None

    return end


@contextlib.contextmanager
def quick_handoffs() -> Iterator[None]:
    """The lowered interval for the block (see :func:`lower_switch_interval`)."""
    end = lower_switch_interval()
    try:
        yield
    finally:
        end()
