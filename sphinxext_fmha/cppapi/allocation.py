"""Reading a large dispatch file without the cyclic garbage collector's full passes.

The reader of a bwd dispatch file allocates some 700,000 containers (leaves, their lists,
terms, memo entries) that all survive: they are the result. Each allocation burst sets off
collections that walk every live object and free nothing, a third of the reading's time.
Pausing the collector for the reading changes no result: it only frees reference
cycles (the few the reader leaves, such as a recursive helper's closure, go at the next
collection after it), and reference counting still frees everything else at once.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause automatic collection for the block; resume it only if this block paused it
    (nested and concurrent readers leave it as the outermost found it)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
