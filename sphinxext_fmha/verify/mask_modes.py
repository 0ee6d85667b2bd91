"""What ``--mask`` changes, read from two real listings: the words only one mode's names
have, and the other mode's mask words this listing carries anyway (``hard_coded``: a
pipeline that sets its mask whatever the mode)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import chain
from pathlib import PurePosixPath
from typing import Dict, List, Sequence, Tuple


@dataclass
class MaskModes:
    this_mode: str
    other_mode: str
    this_count: int = 0
    other_count: int = 0
    only_this: List[str] = field(default_factory=list)
    only_other: List[str] = field(default_factory=list)
    hard_coded: Dict[str, int] = field(default_factory=dict)

    @property
    def changes(self) -> bool:
        return bool(self.only_this or self.only_other)


def _words(name: str) -> List[str]:
    """The ``_``-separated words of the file name's stem."""
    if "/" in name or name in ("", "."):
        return PurePosixPath(name).stem.split("_")
    # PurePosixPath(name).stem for a plain file name, without building a path
    dot = name.rfind(".")
    return (name[:dot] if 0 < dot < len(name) - 1 else name).split("_")


def _context(words: Sequence[str], index: int) -> Tuple[str, str]:
    return "_".join(words[:index]), "_".join(words[index + 1:])


def _word_counts(joined: str) -> Tuple[int, ...]:
    """How many words ``"_".join`` made ``joined`` of ("": none, or one empty word)."""
    return (joined.count("_") + 1,) if joined else (0, 1)


def _holding(named: List[List[str]], words: set) -> List[List[str]]:
    """The names (as words) with one of ``words`` at least."""
    return [name for name in named if not words.isdisjoint(name)] if words else []


def compare_mask_modes(this_mode: str, this_files: Sequence[str],
                       other_mode: str, other_files: Sequence[str]) -> MaskModes:
    """Compare the listings of one API in two mask modes; a feature word written only when
    on (2024's ``_bias``) stands beside a mask word somewhere, and is no mask value."""
    named = list(map(_words, other_files))
    this_words: Counter = Counter(chain.from_iterable(map(set, map(_words, this_files))))
    other_words: Counter = Counter(chain.from_iterable(map(set, named)))
    only_this = sorted(set(this_words) - set(other_words))
    only_other = sorted(set(other_words) - set(this_words))
    # the other mode's mask vocabulary: the words between the same words before and after
    # as its own (by position would also take feature words of names just as long)
    wanted = set(only_other)
    places = {_context(words, i) for words in _holding(named, wanted)
              for i, w in enumerate(words) if w in wanted}
    beside = set(chain.from_iterable(_holding(named, wanted)))  # in a name with one
    candidates = {w for w in other_words if w in this_words and w not in wanted
                  and this_words[w] < other_words[w] and w not in beside}
    # a place is at (words before, words in all): only those positions are joined
    shapes = {(i, i + 1 + j) for before, after in places
              for i in _word_counts(before) for j in _word_counts(after)}
    at: Dict[int, List[int]] = {}  # words in all -> the positions of a place
    for i, size in sorted(shapes):
        at.setdefault(size, []).append(i)
    vocabulary = {words[i] for words in _holding(named, candidates) for i in at.get(len(words), ())
                  if words[i] in candidates and _context(words, i) in places}
    hard_coded = {w: this_words[w] for w in sorted(vocabulary)}
    return MaskModes(this_mode, other_mode, len(this_files), len(other_files),
                     only_this, only_other, hard_coded)
