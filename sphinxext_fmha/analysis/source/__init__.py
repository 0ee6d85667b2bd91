"""Static facts about one FMHA codegen ops module, read with ``ast`` + ``tokenize`` only.

``analyze_source(fmha_dir, "codegen/ops/fmha_fwd.py")`` never imports or executes the
analysed code and never writes into the tree. Every name used to recognise a construct
(``*Tile*`` classes, ``filename`` properties, ``receipt`` parameters, ``fnmatch`` calls,
``*Pool`` classes...) is a heuristic with a fallback; whatever cannot be determined is
reported as a :class:`~sphinxext_fmha.model.Gap`.

One module per collector; each is a function over the shared
:class:`~.context.Context` and runs in the order of :data:`COLLECTORS` (later ones read
what earlier ones stored there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, List, Tuple

from ...model import Gap
from ..pyparse import Unknown
from .blob_functions import find_blob_functions
from .classes import collect_classes
from .context import Context
from .dispatcher import collect_dispatch
from .factories import collect_factories
from .facts import SourceFacts
from .map_uses import collect_map_uses
from .receipt_collector import collect_receipts
from .skips import collect_skip_conditions
from .symbol_maps import collect_symbol_maps
from .tile_classes import collect_tiles
from .universe import Universe

__all__ = ["SourceFacts", "analyze_source"]

#: (label shown in a gap, collector), in the order they run.
COLLECTORS: List[Tuple[str, Callable[[Context], None]]] = [
    ("classes", collect_classes),
    ("symbol maps", collect_symbol_maps),
    ("tile classes", collect_tiles),
    ("map uses", collect_map_uses),
    ("blob functions", find_blob_functions),
    ("factories", collect_factories),
    ("skip conditions", collect_skip_conditions),
    ("receipts", collect_receipts),
    ("dispatch", collect_dispatch),
]


def analyze_source(fmha_dir: Path, module_relpath: str) -> SourceFacts:
    """Read ``fmha_dir/module_relpath`` (and its local imports) and return its facts.

    A module that is missing or does not parse gives facts holding just that gap.  A
    value a collector needs but that cannot be determined statically
    (:class:`~..pyparse.Unknown` escaping a collector) becomes a gap for that
    collector; the others still run.  Any other exception is a bug and propagates.
    """
    root = Path(fmha_dir)
    rel = Path(module_relpath).as_posix()
    facts = SourceFacts(module=rel)
    universe = Universe(root, rel, facts.gaps)
    pm = universe.main
    if pm is None or pm.tree is None:
        return facts
    ctx = Context(root=root, rel=rel, facts=facts, universe=universe, pm=pm, tree=pm.tree)
    for label, collect in COLLECTORS:
        try:
            collect(ctx)
        except Unknown as exc:
            facts.gaps.append(Gap(label, rel, f"analysis failed: {type(exc).__name__}: {exc}"))
    return facts
