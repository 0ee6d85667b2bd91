"""How a guide names tokens: the empty token, and the natural order of numbered tokens."""

from __future__ import annotations

import re
from typing import List, Sequence, Tuple

#: How a page names the empty token (a segment a kernel leaves out of its name).
NO_TOKEN = "(no token)"


_DIGITS = re.compile(r"(\d+)")


def natural(text: str) -> List[Tuple[int, int, str]]:
    """Sort key that orders numbers by value: ``_d32`` < ``_d64`` < ``_d128``."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in _DIGITS.split(text)]


def token_list(tokens: Sequence[str]) -> str:
    """Tokens as a sentence names them (the empty one as :data:`NO_TOKEN`)."""
    return ", ".join(t if t else NO_TOKEN for t in tokens)
