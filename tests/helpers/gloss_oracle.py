"""The tests' own reading of a run's gloss (issue 43, item 4), and its check against the
names the pattern selects: a small parser of the sentence, written here, and fnmatch's
meaning from the standard library (what generate.py matches with), never the package's.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Dict, Iterable, List, Tuple


def fnmatch_regex(pattern: str) -> re.Pattern[str]:
    """fnmatch's own meaning (the standard library's, as generate.py matches)."""
    return re.compile(fnmatch.translate(pattern))


#: "Part 1 (`X`): " of an ``@``-split pattern; "For `X`: " of one pattern read by
#: several sub-types; group 1 is the sub-type either way.
_PART = re.compile(r"(?:Part \d+ \(`([^`]+)`\)|For `([^`]+)`): ")
_GROUP = re.compile(r"((?:`[^`]*`|\(no token\))(?:, (?:`[^`]*`|\(no token\)))*) \(([^()]+)\)")


def _tokens(text: str) -> List[str]:
    return ["" if t == "(no token)" else t.strip("`")
            for t in re.findall(r"`[^`]*`|\(no token\)", text)]


def gloss_parts(gloss: str) -> Dict[str, str]:
    """Kernel type (``""`` for a one-part gloss) -> its sentence."""
    found = list(_PART.finditer(gloss))
    if not found:
        return {"": gloss}
    return {(m.group(1) or m.group(2)): gloss[m.end():(found[i + 1].start() if i + 1 < len(found)
                                                       else len(gloss))]
            for i, m in enumerate(found)}


def gloss_claims(sentence: str) -> Dict[str, List[Tuple[str, List[str]]]]:
    """What one part's sentence says: ``stretches`` [(text, its segments)], ``absent``
    [(segment, tokens no selected name has)], ``only`` [(segment, the tokens every
    selected name has one of)], ``others`` [(segment, how many other values)]."""
    names, _, rest = sentence.partition(";")
    claims: Dict[str, List[Tuple[str, List[str]]]] = {"stretches": [], "absent": [],
                                                        "only": [], "others": []}
    for text, labels in re.findall(r"`([^`]*)`(?: \(([^()]*)\))?", names):
        segments = [] if not labels or "bracket" in labels else labels.split(", ")
        claims["stretches"].append((text, segments))
    for clause in rest.split(";"):
        clause = clause.strip().rstrip(".")
        other = re.search(r"the (\d+) other values of (.+)$", clause)
        if other:
            claims["others"].append((other.group(2), [other.group(1)]))
            continue
        only = clause.split("only ", 1)
        for group in _GROUP.finditer(only[-1]):
            kind = "only" if len(only) == 2 else "absent"
            claims[kind].append((group.group(2), _tokens(group.group(1))))
    return claims


def check_claims(claims, selected: Iterable[str], carries, everywhere: Iterable[str],
                 longer: Iterable[str] = ()) -> None:
    """Assert the claims on the selected names (``carries(name, token)``: the test's own
    reading of a token in a name); ``everywhere``: the sub-type's listed names;
    ``longer``: tokens the names keep, a token that starts one of them (``_qr`` of
    ``_qr_async``) cannot be told from it by a reading of the name alone: not checked."""
    selected, everywhere, longer = list(selected), list(everywhere), list(longer)
    assert selected
    for text, _ in claims["stretches"]:
        if "[" not in text and "?" not in text:
            assert all(text in name for name in selected), text
    for segment, tokens in claims["absent"]:
        for token in (t for t in tokens if t and not any(
                other != t and other.startswith(t) for other in longer)):
            assert not any(carries(name, token) for name in selected), (segment, token)
            assert any(carries(name, token) for name in everywhere), (segment, token)
    for segment, tokens in claims["only"]:
        assert all(any(carries(name, t) for t in tokens if t) or "" in tokens
                   for name in selected), (segment, tokens)
