"""Warnings that are not failures (a cache not written, a result not kept, a full temporary
folder): said once per process and subject, on stderr or through :func:`set_handler` (the
Sphinx glue). No Sphinx imports here.
"""

from __future__ import annotations

import sys
import threading
from typing import Callable, List, Optional, Set, Tuple

from ..errors import WarningType

__all__ = ["Handler", "notice", "set_handler", "said", "to_stderr"]

Handler = Callable[[WarningType, str], None]

_LOCK = threading.Lock()
_HANDLER: List[Handler] = []
_SEEN: Set[str] = set()
#: Every notice given in this process (tests read them).
_SAID: List[Tuple[WarningType, str]] = []


def to_stderr(line: str) -> None:
    """One line on stderr; a closed (``2>&-``) or broken one is no error of ours."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):  # (None when closed)
        pass


def _to_stderr(kind: WarningType, message: str) -> None:
    to_stderr("sphinxext-fmha: warning: " + message)


def set_handler(handler: Optional[Handler]) -> None:
    """Where notices go from now on (None: standard error)."""
    with _LOCK:
        _HANDLER[:] = [handler] if handler is not None else []


def notice(kind: WarningType, message: str, subject: Optional[str] = None) -> None:
    """Tell ``message`` once per ``subject`` (default: the message itself)."""
    with _LOCK:
        key = "%s\0%s" % (kind.value, subject if subject is not None else message)
        if key in _SEEN:
            return
        _SEEN.add(key)
        _SAID.append((kind, message))
        handler = _HANDLER[0] if _HANDLER else _to_stderr
    handler(kind, message)


def said() -> List[Tuple[WarningType, str]]:
    """The notices given so far in this process."""
    with _LOCK:
        return list(_SAID)
