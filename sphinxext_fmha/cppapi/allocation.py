"""Building large results without the cyclic garbage collector's passes over them.

A guide's analysis allocates hundreds of thousands of containers that all survive: they
are the result (a bwd dispatch file's leaves and terms, a codegen's syntax trees, a
model's kernels and grammar). Each allocation burst sets off collections that walk every
live object and free nothing; and since a full collection follows every 25 % of growth of
what lives, a heap that grows step by step is walked again and again (a cold 2.8.3
gallery spent 4 s of the reader's 22 s collecting). Pausing the collector while such a
result is built changes nothing it computes: the collector only frees reference cycles
(the few this code leaves, such as a recursive helper's closure, go at the next full
collection: what a pause leaves alive counts as old, see :func:`_age_survivors`), and
reference counting still frees everything else at once.

Beyond the readers here, a page's directive and ``sphinxext-fmha prepare`` (the worker
interpreters) pause around one page's guide: what stays uncollected meanwhile is that
page's own garbage. Work started ahead in a thread does not pause by itself: it can last
while Sphinx reads other pages, whose doctrees (reference cycles) must go. It lives in
``cppapi`` because the probe loads that package on its own, in generate.py's interpreter.

At exit, the same holds once more: CPython's last collection walks every object still
alive and frees nothing the end of the process would not (2.3 s at the end of a cold
``sphinx-build`` of flash-attn 2.8.3's six guides, 0.5 s at the end of its ``bwd`` probe;
``py-spy --native`` shows it in ``gc_collect_main``). :func:`freeze_at_exit` has an exit
handler call :func:`gc.freeze` first (exit handlers run before that collection, and the
permanent generation is never collected). While the process lives nothing changes, and
Python never promised to finalise the objects of reference cycles alive at exit.

Kept because measured (issue 42, ``benchmarks/bench_build.py``, the cold flash-attn 2.8.3
gallery, two rounds side by side): the cold build's CPU 49.8 s with these pauses, 58.0 s
without (55.3-60.8 s): 14 % saved, over the 10 % that keeps a trick.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import threading
from typing import Iterator

__all__ = ["collector_paused", "freeze_at_exit"]

_lock = threading.Lock()
#: blocks paused now, in all threads; whether the collector ran before the first of them
_paused = 0
_resume = False
_freeze_registered = False


def _new_lock_in_child() -> None:
    # a child forked while another thread held the lock would wait on it forever
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_new_lock_in_child)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause automatic collection for the block. Nested and concurrent blocks (a page and
    work started ahead in another thread) share the pause: the collector resumes when the
    last of them ends, and only if it ran before the first began."""
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
                _age_survivors()
                gc.enable()


def _age_survivors() -> None:
    """Count what the pause left alive as old: the oldest generation, collected only in
    full collections. Left young, the next collection of the youngest generation walks
    it all and frees nearly nothing, and so does the next of the middle one (after the
    bwd page of a cold 2.8.3 gallery: 0.32 s and 0.19 s in the reader, one core's
    time). ``freeze`` moves every tracked object to the permanent generation and
    ``unfreeze`` every one of those into the oldest: two list splices, whatever the
    heap's size; no object stays out of reach of the collector. Objects another part of
    the process froze on purpose (``gc.freeze`` before forking workers) stay frozen:
    then nothing is moved."""
    if gc.get_freeze_count():
        return
    gc.freeze()
    gc.unfreeze()


def freeze_at_exit() -> None:
    """Let the interpreter's last collection skip what is alive at exit (the handler is
    registered once per process; see the module docstring)."""
    global _freeze_registered
    with _lock:
        if not _freeze_registered:
            atexit.register(gc.freeze)
            _freeze_registered = True
