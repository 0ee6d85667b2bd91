"""What only an FMHA codegen ops module's source says (comments, conditions as written,
where a factory is and when it is chosen), read with ``ast`` + ``tokenize``, never run.
Collectors run in the order of :data:`COLLECTORS`: later ones read what earlier ones stored."""

from __future__ import annotations

from pathlib import Path

from .classes import collect_classes, collect_factories, collect_tiles
from .context import Context, SourceFacts, Universe
from .dispatcher import collect_dispatch
from .receipt_collector import collect_receipts
from .skips import collect_skip_conditions, find_blob_functions
from .symbol_maps import collect_symbol_maps

__all__ = ["SourceFacts", "analyze_source"]

COLLECTORS = (collect_classes, collect_symbol_maps, collect_tiles, find_blob_functions,
              collect_factories, collect_skip_conditions, collect_receipts, collect_dispatch)


def analyze_source(fmha_dir: Path, module_relpath: str) -> SourceFacts:
    """Read ``fmha_dir/module_relpath`` (and its local imports) and return its facts; a
    module that is missing or does not parse gives facts holding just that gap."""
    root = Path(fmha_dir)
    rel = Path(module_relpath).as_posix()
    facts = SourceFacts(module=rel)
    universe = Universe(root, rel, facts.gaps)
    pm = universe.main
    if pm is None or pm.tree is None:
        return facts
    ctx = Context(root=root, rel=rel, facts=facts, universe=universe, pm=pm, tree=pm.tree)
    for collect in COLLECTORS:
        collect(ctx)
    return facts
