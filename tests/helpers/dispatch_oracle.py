"""A small regex reader of generated C++, written for the tests (nothing of
``sphinxext_fmha.cppapi``): it pairs each kernel file of a write-mode run with the
innermost ``if(...) { using trait_ = ...;`` block of the API file by the trait text
(aliases of the kernel file expanded by plain substitution) and splits the condition on
top-level ``&&``; :func:`python_of` reads a condition as a Python expression."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List

COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
LEAF = re.compile(r"if\s*\(((?:[^{}])*?)\)\s*\{\s*using\s+(\w+)\s*=\s*([^;]+);", re.S)
USING = re.compile(r"\busing\s+(\w+)\s*=\s*([^;]+);")


def norm(text: str) -> str:
    return re.sub(r"\s+", "", COMMENT.sub("", text))


def _top_split(text: str, sep: str) -> List[str]:
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    return parts + [text[start:]]


def unwrap(text: str) -> str:
    while text.startswith("(") and text.endswith(")"):
        depth = 0
        for i, c in enumerate(text):
            depth += (c == "(") - (c == ")")
            if depth == 0 and i < len(text) - 1:
                return text
        text = text[1:-1]
    return text


def oracle_terms(condition: str) -> List[str]:
    """Top-level ``&&`` terms; comments, blanks and always-true terms dropped."""
    out = []
    for part in _top_split(unwrap(norm(condition)), "&&"):
        part = unwrap(part)
        if part and re.sub(r"[()&|\s]|true", "", part):
            out.append(part)
    return out


def nested_branch_terms(folder: Path) -> set:
    """Conditions of simple ``if (X)`` branches (and their ``else``: ``!(X)``) anywhere in
    the API file: levels nested inside a trait's block (``if (t.has_lse)``)."""
    api = next(folder.glob("*_api.cpp")).read_text()
    found = {norm(m.group(1)) for m in re.finditer(r"\bif\s*\(([\w.!]+)\)\s*\{", api)}
    return found | {"!(%s)" % c for c in found}


def oracle_conditions(folder: Path) -> Dict[str, List[str]]:
    """kernel file -> terms of the innermost ``if`` that declares its trait."""
    api = next(folder.glob("*_api.cpp"))
    leaves: Dict[str, List[str]] = {}
    for m in LEAF.finditer(api.read_text()):
        leaves.setdefault(norm(m.group(3)), oracle_terms(m.group(1)))
    out = {}
    for path in folder.glob("*.cpp"):
        if path == api:
            continue
        text = COMMENT.sub("", path.read_text())
        aliases = {m.group(1): norm(m.group(2)) for m in USING.finditer(text)}
        m = re.search(r"template\s*<\s*>\s*[\w:]+\s+\w+\s*<\s*(\w+)", text)
        if not m or m.group(1) not in aliases:
            continue
        trait = expand(aliases[m.group(1)], aliases, m.group(1))
        if trait in leaves:
            out[path.name] = leaves[trait]
    return out


def expand(text: str, aliases: Dict[str, str], own: str) -> str:
    """Replace alias names by their values (a few rounds: aliases of aliases)."""
    for _ in range(5):
        text = re.sub(r"\b\w+\b", lambda w: w.group(0) if w.group(0) == own
                      else aliases.get(w.group(0), w.group(0)), text)
    return text


def python_of(cpp: str) -> str:
    """The oracle's reading of a C++ condition: a Python expression over ``v``."""
    text = re.sub(r'(\w+)\.compare\(0, \d+, ("[^"]*")\) == 0', r'v["\1"].startswith(\2)', cpp)
    text = re.sub(r'(?:t|a)\.(\w+)\.compare\(("[^"]*")\) == 0', r'(v["\1"] == \2)', text)
    text = text.replace("a.seqlen_q == a.seqlen_k", 'v["opaque"]')
    text = re.sub(r"\b(?:t|a)\.(\w+)", r'v["\1"]', text)
    text = re.sub(r"\b(\w+_enum::\w+)", r'"\1"', text)
    text = text.replace("nullptr", "None").replace("true", "True").replace("false", "False")
    text = text.replace("&&", " and ").replace("||", " or ").replace("!(", " not (")
    return text.strip()
