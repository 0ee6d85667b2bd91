"""Candidate fnmatch patterns as boxes (per segment a set of values; safe when no
unwanted kernel has all its tokens in it, one bit-mask ``&``), and the fewest of them
that cover a set. Every pattern is still checked with fnmatch against the names."""

from __future__ import annotations

import fnmatch
import re
from functools import cache, reduce
from operator import or_
from typing import Callable, Dict, FrozenSet, List, Optional, Protocol, Sequence, Set, Tuple

_CLASS_UNSAFE = set("!^-[]\\")


class Named(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def tokens(self) -> Tuple[str, ...]: ...


def escape(text: str) -> str:
    return "".join("[%s]" % c if c in "*?[" else c for c in text)


def _line_regex(pattern: str) -> str:
    """fnmatch's meaning for one line of a newline-joined listing (our patterns use
    literal characters, ``*``, ``?`` and ``[..]`` classes without negation)."""
    out: List[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "*":
            out.append("[^\n]*")
        elif char == "?":
            out.append("[^\n]")
        elif char == "[":
            end = pattern.find("]", index + 2)
            if end < 0:
                out.append(re.escape(char))
            else:
                inner = pattern[index + 1:end]
                if inner.startswith(("!", "^")):
                    out.append("[^\n%s]" % re.escape(inner[1:]))
                else:
                    out.append("[%s]" % "".join(re.escape(c) for c in inner))
                index = end
        else:
            out.append(re.escape(char))
        index += 1
    body = "".join(out)
    # "*X" matches a line when X matches one of its ends: searching for X lets the
    # engine jump between occurrences of X's first characters.
    return body[len("[^\n]*"):] + "$" if body.startswith("[^\n]*") else "^" + body + "$"


class NameSet:
    """Names that a pattern must not match, tested in one regex search."""

    def __init__(self, names: Sequence[str]):
        self.names = sorted(set(names))
        self._text = "\n".join(self.names)
        self._seen: Dict[str, bool] = {}

    def any_match(self, pattern: str) -> bool:
        found = self._seen.get(pattern)
        if found is None:
            found = self._seen[pattern] = bool(self.names) and re.search(
                _line_regex(pattern), self._text, re.M) is not None
        return found


@cache
def matcher(pattern: str) -> Callable[[str], Optional[re.Match]]:
    return re.compile(fnmatch.translate(pattern)).match


def _classes(columns: Sequence[Set[str]]) -> Optional[str]:
    out = []
    for chars in columns:
        if chars & _CLASS_UNSAFE or any(c in "*?" for c in chars):
            return None
        out.append(next(iter(chars)) if len(chars) == 1 else "[%s]" % "".join(sorted(chars)))
    return "".join(out)


def token_globs(chosen: FrozenSet[str], after: str = "") -> List[str]:
    """Globs matching every chosen token, simplest first: prefix ``*`` suffix, then
    per-position classes; ``after``, the character that always follows the segment, may
    end a class from the left (``_d32``, ``_d128`` not ``_d160``: ``_d[1236][2456][468_]*``)."""
    globs = _token_globs(sorted(chosen))
    if after and len(chosen) > 1:
        padded = [t + after for t in chosen]
        for width in range(min(len(t) for t in chosen) + 1, min(len(t) for t in padded) + 1):
            left = _classes([{t[i] for t in padded} for i in range(width)])
            if left is not None:
                globs.append(left + "*")
    # A ``*`` inside a glob may match across segments (``_*[ds]`` reaches the ``d`` of
    # a later ``_unused``): such globs come last.
    return sorted(dict.fromkeys(globs), key=inner_star)


def tail_globs(stems: Sequence[str], suffix: str, widths: int = 8) -> List[str]:
    """``*`` + classes over the stems' last characters + ``suffix``, shortest first
    (``_vc``, ``_ps``, ``_psk`` end ``*[_p][psv][ckrs]``)."""
    out = []
    for width in range(1, min(widths, min(len(s) for s in stems)) + 1):
        classes = _classes([{s[len(s) - width + i] for s in stems} for i in range(width)])
        if classes is not None:
            out.append("*" + classes + escape(suffix))
    return out


def inner_star(glob: str) -> bool:
    return "*" in glob[1:-1]


def _token_globs(tokens: List[str]) -> List[str]:
    if len(tokens) == 1:
        return [escape(tokens[0])]
    globs: List[str] = []
    shortest = min(len(t) for t in tokens)
    prefix = 0
    while prefix < shortest and len({t[prefix] for t in tokens}) == 1:
        prefix += 1
    suffix = 0
    while suffix < shortest - prefix and len({t[-1 - suffix] for t in tokens}) == 1:
        suffix += 1
    head, tail = tokens[0][:prefix], tokens[0][len(tokens[0]) - suffix:]
    if head or tail:
        globs.append(escape(head) + "*" + escape(tail))
    if len({len(t) for t in tokens}) == 1:
        same = _classes([{t[i] for t in tokens} for i in range(shortest)])
        if same is not None:
            globs.append(same)
    for width in range(prefix + 1, shortest + 1):
        left = _classes([{t[i] for t in tokens} for i in range(width)])
        if left is not None:
            globs.append(left + "*" + escape(tail) if width + suffix <= shortest else left + "*")
    for width in range(suffix + 1, shortest + 1):
        right = _classes([{t[len(t) - width + i] for t in tokens} for i in range(width)])
        if right is not None:
            globs.append(escape(head) + "*" + right if prefix + width <= shortest else "*" + right)
    return list(dict.fromkeys(g.replace("**", "*") for g in globs))


class TypeBoxes:
    """One sub-type's bit masks of wanted and unwanted kernels per segment value."""

    def __init__(self, kernels: Sequence[Named], wanted: Set[str], unwanted: Set[str]):
        by_name = {k.name: k for k in kernels if k.name in wanted or k.name in unwanted}
        self.wanted = sorted(n for n in by_name if n in wanted)
        self.unwanted = sorted(n for n in by_name if n not in wanted)
        self.width = max((len(k.tokens) for k in by_name.values()), default=0)
        self.tokens = {n: k.tokens for n, k in by_name.items()}
        self.umask: List[Dict[str, int]] = [{} for _ in range(self.width)]
        self.wmask: List[Dict[str, int]] = [{} for _ in range(self.width)]
        for masks, names in ((self.umask, self.unwanted), (self.wmask, self.wanted)):
            for bit, name in enumerate(names):
                for index, token in enumerate(self.tokens[name]):
                    masks[index][token] = masks[index].get(token, 0) | 1 << bit
        self.values = [sorted(set(self.umask[i]) | set(self.wmask[i])) for i in range(self.width)]
        # The character that always follows a segment (the next token's separator).
        following: List[Set[str]] = [set() for _ in range(self.width)]
        for tokens in set(self.tokens.values()):
            first = ""
            for index in range(len(tokens) - 1, -1, -1):
                following[index].add(first)
                first = tokens[index][:1] or first
        self.after = [next(iter(f)) if len(f) == 1 and not next(iter(f)).isalnum() else ""
                      for f in following]
        self.all_unwanted = (1 << len(self.unwanted)) - 1
        self._effective: Dict[Tuple[int, str], FrozenSet[str]] = {}

    def effective(self, index: int, glob: str) -> FrozenSet[str]:
        """The values of segment ``index`` a token glob matches (ending in ``*``: also with
        the character that always follows)."""
        key = (index, glob)
        found = self._effective.get(key)
        if found is None:
            match, after = matcher(glob), self.after[index] if glob.endswith("*") else ""
            found = self._effective[key] = frozenset(
                v for v in self.values[index] if match(v) or after and match(v + after))
        return found

    def grow(self, seed: Tuple[str, ...], order: Sequence[int], strict: bool = False,
             literal: bool = False) -> List[Optional[str]]:
        """A maximal safe box around ``seed`` (per segment a glob, None: free); ``strict``:
        no inner ``*`` (it may reach past its segment); ``literal``: never widened."""
        globs: List[Optional[str]] = [escape(t) for t in seed]
        chosen: List[FrozenSet[str]] = [frozenset([t]) for t in seed]
        masks = [self.umask[i].get(t, 0) for i, t in enumerate(seed)]
        for index in order:
            saved = globs[index], masks[index]
            globs[index], masks[index] = None, self.all_unwanted
            if not self._inside(globs, masks):
                continue
            globs[index], masks[index] = saved
            if "" in chosen[index] or literal:
                continue  # an empty token only pins its neighbours together
            for value in self.values[index]:
                if value in chosen[index] or not value or not self.wmask[index].get(value):
                    continue
                trial = chosen[index] | {value}
                for glob in token_globs(trial, self.after[index]):
                    if strict and inner_star(glob):
                        continue
                    effective = self.effective(index, glob)
                    if not trial <= effective or "" in effective:
                        continue
                    globs[index], masks[index] = glob, reduce(
                        or_, (self.umask[index].get(v, 0) for v in effective), 0)
                    if not self._inside(globs, masks):
                        chosen[index] = effective
                        break
                    globs[index], masks[index] = saved
                saved = globs[index], masks[index]
        return globs

    def _inside(self, globs: Sequence[Optional[str]], masks: Sequence[int]) -> int:
        """The unwanted kernels the written pattern holds: a pinned empty token says
        something only between two pinned tokens (or a name end) with no ``*`` between."""
        inside = self.all_unwanted
        last = len(globs) - 1
        for index, glob in enumerate(globs):
            if glob is None or glob == "" and (self._open(globs, index, -1, 0)
                                                or self._open(globs, index, 1, last)):
                continue
            inside &= masks[index]
            if not inside:
                return 0
        return inside

    @staticmethod
    def _open(globs: Sequence[Optional[str]], index: int, step: int, end: int) -> bool:
        while index != end:
            index += step
            glob = globs[index]
            if glob is None:
                return True
            if glob:
                # A ``*`` inside a glob may reach over neighbouring segments too.
                return "*" in (glob[1:] if step < 0 else glob[:-1])
        return False


def write_box(globs: Sequence[Optional[str]], seed: Sequence[str], boundary: bool = True) -> str:
    """Pinned segments adjacent, ``*`` for free ones; ``boundary``: the separator that
    starts the seed's next token after a pinned run (``_ps_`` is not ``_psk``)."""
    out: List[str] = []
    previous = False
    for index, glob in enumerate(globs):
        if glob is not None:
            if not previous and index > 0:
                out.append("*")
            out.append(glob)
            previous = True
            continue
        if previous and boundary:
            following = next((t for t in seed[index:] if t), "")
            if following and not following[0].isalnum():
                out.append(escape(following[0]))
        previous = False
    if not previous:
        out.append("*")
    return re.sub(r"\*+", "*", "".join(out))


def greedy_cover(candidates: Dict[str, int], wanted: int) -> List[str]:
    """Greedy: the pattern covering most of the rest first; then redundant ones dropped."""
    chosen: List[str] = []
    left = wanted
    while left:
        best = max(candidates, key=lambda p: (bin(candidates[p] & left).count("1"), -len(p), p))
        if not candidates[best] & left:
            break
        chosen.append(best)
        left &= ~candidates[best]
    for pattern in sorted(chosen, key=lambda p: (bin(candidates[p]).count("1"), p)):
        rest = reduce(or_, (candidates[other] for other in chosen if other != pattern), 0)
        if len(chosen) > 1 and candidates[pattern] & wanted & ~rest == 0:
            chosen.remove(pattern)
    return chosen


def merge_classes(patterns: List[str], unwanted: NameSet) -> List[str]:
    """Merge patterns that differ in one plain character into ``[ab]`` (when safe)."""
    while True:
        found = next(((i, j, merged) for i in range(len(patterns))
                      for j in range(i + 1, len(patterns))
                      for merged in [_merge_two(patterns[i], patterns[j])]
                      if merged and not unwanted.any_match(merged)), None)
        if found is None:
            return patterns
        i, j, merged = found
        patterns = patterns[:i] + [merged] + patterns[i + 1:j] + patterns[j + 1:]


_PIECE = re.compile(r"\[[^\]]*\]|.")


def _merge_two(a: str, b: str) -> Optional[str]:
    pa, pb = _PIECE.findall(a), _PIECE.findall(b)
    if len(pa) != len(pb):
        return None
    diff = [k for k, (x, y) in enumerate(zip(pa, pb)) if x != y]
    if len(diff) != 1:
        return None
    k = diff[0]
    chars = set()
    for piece in (pa[k], pb[k]):
        inner = piece[1:-1] if piece.startswith("[") else piece  # ``*``, ``?``, ``!``: no
        if not all(c.isalnum() for c in inner):
            return None
        chars.update(inner)
    return "".join(pa[:k]) + "[" + "".join(sorted(chars)) + "]" + "".join(pa[k + 1:])
