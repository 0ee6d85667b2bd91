"""Static facts about one FMHA codegen ops module, read with ``ast`` + ``tokenize`` only:
what only the source says (comments, conditions as written, where a factory is and when
it is chosen). It never imports or executes the analysed code and never writes into the
tree. The names that recognise a construct (``*Tile*`` classes, ``receipt`` parameters,
``*Pool`` classes...) are heuristics; what cannot be determined is a
:class:`~sphinxext_fmha.model.Gap`.

One module per collector, each a function over the shared :class:`~.context.Context`,
run in the order of :data:`COLLECTORS` (later ones read what earlier ones stored).
"""

from __future__ import annotations

from pathlib import Path

from .blob_functions import find_blob_functions
from .classes import collect_classes
from .context import Context
from .dispatcher import collect_dispatch
from .factories import collect_factories
from .facts import SourceFacts
from .receipt_collector import collect_receipts
from .skips import collect_skip_conditions
from .symbol_maps import collect_symbol_maps
from .tile_classes import collect_tiles
from .universe import Universe

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
