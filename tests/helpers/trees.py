"""The real CK corpus trees of the packaged ``ck-corpus.toml``, fetched (once, into the
shared download cache) for the tests that need them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict

import pytest

from sphinxext_fmha.corpus import CorpusError, CorpusTree, fetch_tree, load_corpus

CORPUS = load_corpus()
CORPUS_NAMES = [tree.name for tree in CORPUS]

#: What the tests share with the user's cache folder: downloads and what is made of them
#: (the corpus archives, their extracted trees, the virtual environments of the CK docs
#: build, and the locks that guard them). Results (``runs/``) never: every test session
#: gets a fresh folder for those (``conftest.py``).
DOWNLOADS = ("sdists", "trees", "locks", "ck-docs-venvs")


def offline() -> bool:
    """Whether ``FMHA_OFFLINE`` asks to skip the corpus tests."""
    return os.environ.get("FMHA_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def corpus_tree(name: str) -> CorpusTree:
    for tree in CORPUS:
        if tree.name == name:
            return tree
    raise LookupError(f"no corpus tree {name!r}; known: {', '.join(CORPUS_NAMES)}")


_ROOTS: Dict[str, Path] = {}


def fetch(name: str) -> Path:
    """The CK root of corpus tree ``name``; fails the test when it cannot be fetched."""
    if name not in _ROOTS:
        try:
            _ROOTS[name] = fetch_tree(corpus_tree(name))
        except CorpusError as exc:
            pytest.fail(
                f"corpus tree {name} is not available: {exc}\n"
                "(set FMHA_OFFLINE=1 to skip the corpus tests on a machine without network)",
                pytrace=False,
            )
    return _ROOTS[name]
