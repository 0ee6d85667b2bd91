"""Session-scoped fixtures of the analysis tests (a pytest plugin).

Registered by ``pytest_plugins = ["helpers.plugins_analysis"]`` in the analysis test modules.

``analysis_cache_dir``: the cache folder every analysis of the session shares: by
  default the session's own results folder (``FMHA_CACHE_DIR``, a fresh folder per test
  session made by ``conftest.py``, shared by all pytest-xdist workers), so the sessions a
  test opens with the default cache read what the analysis groups computed, and the
  reverse; ``FMHA_ANALYSIS_TEST_CACHE=<dir>`` makes it persistent (warm runs).

``analysis_sessions``: ``analysis_sessions(tree)`` is a :class:`Session` of that corpus tree
  on the same shared cache, for the tests that read whole guides; with
  ``analysis_fixtures.with_analysis_group`` their cases join the analysis group of their API, so they
  read its probe and model instead of computing them again.

``corpus_models``: ``corpus_models.get(tree, api, mask)`` computes (once per session
  and worker) the model of one API of one corpus tree, the independent listing, and
  snapshots of the tree before and after the analysis. The default mask's model is the
  one a page gets (``Session.model``: its probe lists the other ``--mask`` mode too),
  whose probe the playground and dispatch-file tests of the API read back from the
  shared cache; a ``--mask`` given is analysed with ``analyze_api``, so both paths to a
  model are tested on every tree.  The analysis tests group
  their items with ``xdist_group`` marks so ``--dist loadgroup`` computes each slow
  model on one worker only; on top of that a file lock per model in the shared
  session folder makes a second worker that needs the same model wait for the first
  and then read it from the shared cache (so no slow generate.py run is repeated
  even when the scheduler splits a group).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import pytest

from sphinxext_fmha.analysis.analyze import Options, Tree, analyze_api
from sphinxext_fmha.cachedir import file_lock
from sphinxext_fmha.corpus import CorpusTree, load_corpus
from sphinxext_fmha.model import ApiModel
from sphinxext_fmha.process.cache import DiskCache
from sphinxext_fmha.session import Session

from helpers.analysis_fixtures import Listing, cached_listing, results_store, snapshot


@pytest.fixture(scope="session")
def analysis_cache_dir() -> Path:
    return results_store()


@pytest.fixture(scope="session")
def analysis_cache(analysis_cache_dir) -> DiskCache:
    return DiskCache(analysis_cache_dir / "runs")


@dataclass
class CorpusModel:
    tree: CorpusTree
    root: Path
    api: str
    mask: Optional[str]
    model: ApiModel
    listing: Listing
    seconds: float
    before: Dict[str, str] = field(repr=False, default_factory=dict)
    after: Dict[str, str] = field(repr=False, default_factory=dict)


class CorpusModels:
    """Memo of corpus models for one session (one per xdist worker)."""

    def __init__(self, fetch: Callable[[str], Path], cache: DiskCache, store: Path,
                 session: Callable[[str], Session]) -> None:
        self.fetch = fetch
        self.session = session
        self.cache = cache
        self.store = store
        self.trees = {t.name: t for t in load_corpus()}
        self._tree_info: Dict[str, Tree] = {}
        self._done: Dict[Tuple[str, str, Optional[str]], object] = {}

    def get(self, tree_name: str, api: str, mask: Optional[str]) -> CorpusModel:
        key = (tree_name, api, mask)
        if key not in self._done:
            try:
                self._done[key] = self._compute(*key)
            except BaseException as exc:  # computed once; every test reports it
                if not isinstance(exc, Exception):
                    raise
                self._done[key] = exc
        value = self._done[key]
        if isinstance(value, Exception):
            pytest.fail("analysing %s -a %s -m %s failed: %r" % (tree_name, api, mask, value),
                        pytrace=False)
        return value  # type: ignore[return-value]

    def _compute(self, tree_name: str, api: str, mask: Optional[str]) -> CorpusModel:
        name = hashlib.sha256(repr((tree_name, api, mask)).encode()).hexdigest()[:24]
        with file_lock(self.store / "analysis-locks" / (name + ".lock")):
            return self._computefile_lock(tree_name, api, mask)

    def _computefile_lock(self, tree_name: str, api: str, mask: Optional[str]) -> CorpusModel:
        root = self.fetch(tree_name)
        if tree_name not in self._tree_info:
            self._tree_info[tree_name] = Tree.load(root)
        before = snapshot(root)
        started = time.monotonic()
        if mask is None:
            model = self.session(tree_name).model(api, Options())
        else:
            model = analyze_api(root, api, Options(mask=mask), cache=self.cache,
                                tree=self._tree_info[tree_name])
        seconds = time.monotonic() - started
        after = snapshot(root)
        listing = cached_listing(self.store, root / "example/ck_tile/01_fmha", api, mask)
        return CorpusModel(self.trees[tree_name], root, api, mask, model, listing,
                           round(seconds, 3), before, after)

    def computed(self) -> List[CorpusModel]:
        return [v for v in self._done.values() if isinstance(v, CorpusModel)]


@pytest.fixture(scope="session")
def analysis_sessions(corpus_root, analysis_cache_dir) -> Callable[[str], Session]:
    sessions: Dict[str, Session] = {}

    def get(tree_name: str) -> Session:
        if tree_name not in sessions:
            sessions[tree_name] = Session(corpus_root(tree_name),
                                          cache_dir=analysis_cache_dir / "runs")
        return sessions[tree_name]

    return get


@pytest.fixture(scope="session")
def corpus_models(corpus_root, analysis_cache, analysis_cache_dir,
                  analysis_sessions) -> CorpusModels:
    return CorpusModels(corpus_root, analysis_cache, analysis_cache_dir, analysis_sessions)
