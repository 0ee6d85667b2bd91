"""Tiles per architecture come from what generate.py produced (issue 9, item 8).

Independent oracle: the test lists the kernels with generate.py itself and reads
architecture, data type, head dim and tile from the file names with its own regular
expressions; the rendered section's table must say exactly that, kernel counts
included. Synthetic mutants key their tile tables in ways the static reader cannot
evaluate (packed text unpacked at run time, one class per architecture): the table is
still complete, and the page says where the source reading and the listing disagree.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Counter as CounterType
from typing import Dict, List, Tuple

import pytest

from sphinxext_fmha.guide import collect_guide
from sphinxext_fmha.locate import fmha_dir
from sphinxext_fmha.render.markdown import guide_markdown
from sphinxext_fmha.session import Session

from helpers import synthetic
from helpers.analysis_fixtures import cached_listing, with_analysis_group
from helpers.independent import independent_listing
from helpers.names import ARCH as _ARCH
from helpers.names import DTYPE as _DTYPE
from helpers.names import HDIM as _HDIM
from helpers.trees import CORPUS

pytest_plugins = ["helpers.plugins_analysis"]

FMHA = "example/ck_tile/01_fmha"

# -- a small, independent reading of kernel file names --------------------------------

#: A block tile with its warp layout: ``_b128x64x32_r4x1x1_r4x1x1_w32x32x16_w32x32x16``;
#: the toy's tiles are a bare ``_b128x64`` with an optional occupancy.
_WARP_TILE = re.compile(r"_(b\d+(?:x\d+)+(?:_r\d+x\d+x\d+)+(?:_w\d+x\d+x\d+)+)")
_TOY_TILE = re.compile(r"_(b\d+x\d+(?:_o\d+)?)_qr")

#: (arch, dtype, hdim, tile) -> kernels
Tally = CounterType[Tuple[str, str, str, str]]


def read_names(files, tile: re.Pattern) -> Tally:
    """What the file names say, for the kernels whose names carry a ``tile``."""
    tally: Tally = Counter()
    for name in files:
        found = tile.search(name)
        if not found:
            continue
        arch = _ARCH.search(name)
        tally[(arch.group(1) if arch else "", _DTYPE.search(name).group(1),
               _HDIM.search(name).group(1), found.group(1))] += 1
    return tally


# -- a small, independent reading of the rendered section ------------------------------

_CODE = re.compile(r"`([^`]*)`")
_TILE_USE = re.compile(r"`([^`]+)` \((\d+) kernels?")


def read_page(markdown: str, tile: re.Pattern) -> Tally:
    """The section's tables summed per (arch, dtype, hdim, tile) (other key columns such
    as ``trload`` are summed over); a tile cell counts for each data type of its row."""
    tally: Tally = Counter()
    header: List[str] = []
    for line in markdown.splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if not header:
            header = cells
            continue
        if set(line) <= set("|- "):
            continue
        if "Tiles (kernels)" not in header:
            continue
        row: Dict[str, List[str]] = {h: _CODE.findall(c) for h, c in zip(header, cells)}
        uses = _TILE_USE.findall(cells[header.index("Tiles (kernels)")])
        for dtype in row["dtype"]:
            for name, count in uses:
                found = tile.search("_" + name + "_qr")
                if found:
                    key = (row.get("arch", [""])[0], dtype, row["hdim"][0], found.group(1))
                    tally[key] += int(count)
    return tally


def tiles_markdown(session: Session, api: str) -> str:
    data = collect_guide(session, api, sections=["tiles"])
    return guide_markdown(data, sections=["tiles"])


# -- the corpus ------------------------------------------------------------------------

CASES = [(tree.name, api) for tree in CORPUS for api in sorted(tree.apis) if api in ("fwd", "bwd")]


@pytest.fixture(scope="module")
def sessions(corpus_roots, analysis_sessions):
    """The trees' sessions on the analysis tests' shared cache (see plugins_analysis)."""
    return {name: analysis_sessions(name) for name in corpus_roots}


@pytest.mark.parametrize("tree,api", with_analysis_group(CASES))
def test_tile_rows_are_what_generate_py_listed(sessions, corpus_roots, analysis_cache_dir,
                                               tree, api):
    # the group's independent listing (its model's test ran it; aiter's bwd lists for
    # a minute): generate.py's own -l, run by the test code, not by the library
    listed = set(cached_listing(analysis_cache_dir, fmha_dir(corpus_roots[tree]), api,
                                None).kernels)
    expected = read_names(listed, _WARP_TILE)
    assert expected, "the oracle found no tiled kernel names"
    page = tiles_markdown(sessions[tree], api)
    assert read_page(page, _WARP_TILE) == expected
    # the title names architectures where the names carry one (aiter's _gfx9 suffix)
    per_arch = any(re.search(r"_gfx\w+\.cpp$", name) for name in listed)
    title = "Tiles per architecture" if per_arch else "Tiles"
    assert re.search(r"^#+ %s$" % title, page, re.M), page[:200]


#: convert_dq's name: its tile (``b64x128`` and ``o2``) with the mode between them.
_CONVERT_DQ = re.compile(r"^fmha_bwd_convert_dq_d(\d+)_([a-z0-9]+)_(b\d+x\d+)_(?:batch|group)_(o\d+)")
#: the page's text of such a tile: block and occupancy, nothing else
_BLOCK_OCCUPANCY = re.compile(r"_(b\d+x\d+_o\d+)_qr")


@pytest.mark.parametrize("tree,api", with_analysis_group(
    [(tree, api) for tree, api in CASES if api == "bwd"]))
def test_a_tile_split_by_the_mode_is_the_tile_alone(sessions, corpus_roots, analysis_cache_dir,
                                                     tree, api):
    """bwd's convert_dq names its tile in two pieces with the mode between them: the
    page's tile is the two pieces (each used in both modes), never the mode."""
    listed = cached_listing(analysis_cache_dir, fmha_dir(corpus_roots[tree]), api, None).kernels
    expected: Tally = Counter()
    for name in listed:
        found = _CONVERT_DQ.match(name)
        if found:
            hdim, dtype, block, occupancy = found.groups()
            arch = _ARCH.search(name)
            expected[(arch.group(1) if arch else "", dtype, hdim,
                      "%s_%s" % (block, occupancy))] += 1
    assert expected, "the oracle found no convert_dq kernel"
    page = tiles_markdown(sessions[tree], api)
    assert read_page(page, _BLOCK_OCCUPANCY) == expected
    assert not re.search(r"`b\d+(x\d+)?_(batch|group)_o\d+`", page)


# -- synthetic mutants -----------------------------------------------------------------

#: One factory class per architecture; the kernels carry the arch in their file names.
_FACTORIES_PACKED = r'''
# Tile tables per architecture, packed as text and unpacked when the codegen runs:
# dtype:hdim=bm0xbn0xbk0xoccupancy[+another tile],...
_PACKED_TILES = {
    'gfx9': 'fp16:64=128x64x32x-1,128=128x128x32x2 bf16:64=128x64x32x-1,128=128x128x32x2',
    'gfx950': 'fp16:64=128x64x32x-1,128=128x128x32x2+64x128x32x-1 bf16:128=128x128x32x2',
}


class ToyFactoryGfx9:
    arch = 'gfx9'

    @classmethod
    def get_hdim_tile_size_dict(cls, dtype: str) -> Optional[Dict[int, List[ToyTileSize]]]:
        tables = dict(part.split(':') for part in _PACKED_TILES[cls.arch].split())
        if dtype not in tables:
            return None
        return {int(h): [ToyTileSize(*map(int, t.split('x'))) for t in ts.split('+')]
                for h, ts in (e.split('=') for e in tables[dtype].split(','))}


class ToyFactoryGfx950(ToyFactoryGfx9):
    arch = 'gfx950'


FACTORIES = [ToyFactoryGfx9, ToyFactoryGfx950]
'''

#: The toy's tile table, returned by the factories below.
_TABLE = r'''            return {
                64  : [ToyTileSize(128, 64,  32, -1)],
                128 : [ToyTileSize(128, 128, 32,  2)],
            }
        return None
'''

#: Plain dicts the static reader evaluates; the blob function adds a gfx950 tile of its own.
_FACTORIES_EXTENDED = r'''
class ToyFactoryGfx9:
    arch = 'gfx9'

    @classmethod
    def get_hdim_tile_size_dict(cls, dtype: str) -> Optional[Dict[int, List[ToyTileSize]]]:
        if dtype in ('fp16', 'bf16'):
''' + _TABLE + r'''

class ToyFactoryGfx950(ToyFactoryGfx9):
    arch = 'gfx950'


FACTORIES = [ToyFactoryGfx9, ToyFactoryGfx950]
'''

#: Newer CK's shape (2026): class methods, per-arch subclasses, a ``super()`` call, the
#: data types each factory supports looped over, a custom factory chosen by an
#: environment variable (not set here: generate.py never calls it).
_FACTORIES_2026 = r'''
class ToyRuleFactory:
    @classmethod
    def get_rules(cls):
        return []


class ToyFactoryGfx9(ToyRuleFactory):
    arch = 'gfx9'
    _DT_16 = ('fp16', 'bf16')

    @classmethod
    def supported_dtypes(cls):
        return cls._DT_16

    @classmethod
    def get_hdim_tile_size_dict(cls, dtype: str) -> Optional[Dict[int, List[ToyTileSize]]]:
        if dtype in cls._DT_16:
''' + _TABLE + r'''

class ToyFactoryGfx950(ToyFactoryGfx9):
    arch = 'gfx950'

    @classmethod
    def get_hdim_tile_size_dict(cls, dtype: str) -> Optional[Dict[int, List[ToyTileSize]]]:
        result = super().get_hdim_tile_size_dict(dtype)
        if dtype == 'fp16':
            result[128].append(ToyTileSize(64, 128, 32, -1))
        return result


class ToyCustomFactory(ToyFactoryGfx9):
    @classmethod
    def get_hdim_tile_size_dict(cls, dtype: str) -> Optional[Dict[int, List[ToyTileSize]]]:
        result = ToyFactoryGfx9.get_hdim_tile_size_dict(dtype)
        for tiles in result.values():
            tiles.insert(0, ToyTileSize(32, 32, 32, -1))
        return result


def get_factory(target):
    import os
    if os.environ.get('TOY_CUSTOM_FACTORY', '0') == '1':
        return ToyCustomFactory
    if target.startswith('gfx950'):
        return ToyFactoryGfx950
    return ToyFactoryGfx9


FACTORIES = [get_factory(target) for target in ('gfx9', 'gfx950')]
'''

#: A 2026 class with two tile methods (fwd_splitkv: its own main kernels' table, and the
#: combine kernels' table of its base), the base's called first.
_FACTORIES_TWO_TABLES = _FACTORIES_2026.replace(r'''
class ToyRuleFactory:
    @classmethod
    def get_rules(cls):
        return []
''', r'''
class ToyRuleFactory:
    @classmethod
    def get_rules(cls):
        return []

    @classmethod
    def get_combine_tile_size_dict(cls, dtype: str) -> Dict[int, List[ToyTileSize]]:
        return {64: [ToyTileSize(32, 32, 32, -1)]}
''')
_COMBINE_CALL = (
    "        d = factory.get_hdim_tile_size_dict(dtype)",
    "        factory.get_combine_tile_size_dict(dtype)\n"
    "        d = factory.get_hdim_tile_size_dict(dtype)")

#: The 2026 blob function's loop: each factory's own data types.
_DTYPE_LOOP = (
    "    for factory, dtype in itertools.product(FACTORIES, DTYPE_MAP.keys()):\n",
    "    for factory, dtype in ((f, t) for f in FACTORIES for t in f.supported_dtypes()):\n")

#: The blob function's own gfx950 tile (outside every factory table).
_EXTRA_TILE = (
    "        for (hdim, tiles), mode in itertools.product(d.items(), MODE_MAP.keys()):\n",
    "        for (hdim, tiles), mode in itertools.product(d.items(), MODE_MAP.keys()):\n"
    "            if factory.arch == 'gfx950' and dtype == 'fp16' and hdim == 128:\n"
    "                tiles = tiles + [ToyTileSize(64, 128, 32, -1)]\n")


def _per_arch(root: Path, factories: str, *extra: Tuple[str, str]) -> Path:
    """The toy tree with its tile function replaced by per-arch ``factories`` and an
    arch suffix on every kernel file name."""
    module = root / FMHA / "codegen" / "ops" / "fmha_toy.py"
    text = module.read_text(encoding="utf-8")
    start = text.index("def get_hdim_tile_size_dict(")
    end = text.index("def get_pipelines(")
    text = text[:start] + factories.lstrip("\n") + "\n\n" + text[end:]
    rewrites = [
        ("    mask_impl  : str  # simplified/generic\n",
         "    mask_impl  : str  # simplified/generic\n    F_arch     : str = 'gfx9'\n"),
        ('        return self.name + ".cpp"', '        return self.name + "_" + self.F_arch + ".cpp"'),
        ("    for dtype in DTYPE_MAP.keys():\n        d = get_hdim_tile_size_dict(dtype)",
         "    for factory, dtype in itertools.product(FACTORIES, DTYPE_MAP.keys()):\n"
         "        d = factory.get_hdim_tile_size_dict(dtype)"),
        ("F_pipeline=pipeline, mask_impl=mask_impl)",
         "F_pipeline=pipeline, mask_impl=mask_impl, F_arch=factory.arch)"),
        *extra,
    ]
    for old, new in rewrites:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    module.write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize("variant", ["packed", "extended", "2026", "two tables"])
def test_tiles_of_unreadable_per_arch_factories(tmp_path, variant):
    root = synthetic.make_tree(tmp_path, "base")
    if variant == "packed":
        root = _per_arch(root, _FACTORIES_PACKED)
    elif variant == "2026":
        root = _per_arch(root, _FACTORIES_2026, _DTYPE_LOOP)
    elif variant == "two tables":
        root = _per_arch(root, _FACTORIES_TWO_TABLES, _DTYPE_LOOP, _COMBINE_CALL)
    else:
        root = _per_arch(root, _FACTORIES_EXTENDED, _EXTRA_TILE)
    listed = independent_listing(root, "toy", tmp_path)
    expected = read_names(listed, _TOY_TILE)
    assert {k[0] for k in expected} == {"gfx9", "gfx950"}
    gfx950_only = {k[3] for k in expected if k[0] == "gfx950"} - {k[3] for k in expected if k[0] == "gfx9"}
    assert gfx950_only == {"b64x128"}  # the mutant really has an arch-specific tile

    session = Session(root, cache_dir=tmp_path / "cache")
    model = session.model("toy")
    read = {f.class_name: f.tiles for f in model.factories}
    page = tiles_markdown(session, "toy")
    assert read_page(page, _TOY_TILE) == expected
    assert "| arch | dtype | hdim | Tiles (kernels) |" in page
    assert re.search(r"^#+ Tiles per architecture$", page, re.M), page[:200]
    if variant in ("packed", "2026", "two tables"):
        # tables the source reading cannot evaluate: generate.py's run computed them,
        # as the listing has them per arch (gfx950's own tile included)
        observed = {(arch, dtype, hdim, tile) for (arch, dtype, hdim, tile) in expected}
        factory = {"gfx9": "ToyFactoryGfx9", "gfx950": "ToyFactoryGfx950"}
        if variant == "two tables":  # each method's table on its own, the kernels' matched
            factory = {a: f + ".get_hdim_tile_size_dict" for a, f in factory.items()}
            assert "`gfx9`: `ToyFactoryGfx9.get_hdim_tile_size_dict`" in page
            assert {f.class_name for f in model.factories} >= {
                "ToyFactoryGfx9.get_combine_tile_size_dict", "ToyFactoryGfx950.get_combine_tile_size_dict"}
        assert {(a, d, h, t) for a, f in factory.items() for d, per in read[f].items()
                for h, tiles in per.items() for t in tiles} == observed
        assert all(f.observed for f in model.factories if f.class_name in factory.values())
        assert "Tile tables as generate.py's run got them:" in page
        assert "not in its factory's table" not in page and "No tile table" not in page
        assert not model.gaps, model.gaps
        if variant != "packed":
            # the factory the run did not use: its table as the probe asked it for one
            custom = [f for f in model.factories
                      if f.class_name.partition(".")[0] == "ToyCustomFactory" and f.tiles]
            assert custom and not any(f.observed for f in custom)
            assert re.search(r"`ToyCustomFactory(\.\w+)?` \(generate.py's run did not call it\)",
                             page)
    else:
        # both tables are read and match; the blob function's own tile is not in them
        assert read.get("ToyFactoryGfx9") and read.get("ToyFactoryGfx950"), read
        assert "`gfx9`: `ToyFactoryGfx9`" in page and "`gfx950`: `ToyFactoryGfx950`" in page
        extra = [line for line in page.splitlines() if "`b64x128`" in line]
        assert len(extra) == 1 and "`gfx950` | `fp16` | `128`" in extra[0], extra
        assert "`b64x128` (24 kernels) *not in its factory's table*" in extra[0]
        assert page.count("not in its factory's table") == 2  # the mark and its explanation


_CONDITION = re.compile(r"TileSize\([^()]*?CppConstraint\((['\"])(.*?)\1\)")


def test_tile_conditions_are_read_from_the_source(corpus_roots):
    """Every tile constructor with a condition (``CppConstraint('...')``) in a tree's fwd
    module is noted on some factory, as the C++ condition it writes."""
    checked = 0
    for name, root in corpus_roots.items():
        session = Session(root)
        if "fwd" not in {a.name for a in session.apis()}:
            continue
        source = (root / FMHA / "codegen" / "ops" / "fmha_fwd.py").read_text(encoding="utf-8")
        written = {m.group(2) for m in _CONDITION.finditer(source)}
        notes = {n for f in session.model("fwd").factories for n in f.tile_notes.values()}
        assert written <= notes, (name, written - notes)
        checked += len(written)
    assert checked, "no corpus tree has a tile with a condition"


_KEPT = re.compile(r"`([^`]+)` \((\d+) kernels?, (\d+) kept")


def test_kept_counts_are_the_recommended_commands_union(tmp_path):
    """With the recommendation, each tile says how many kernels of the minimal set use
    it: the union of the shown commands' listings, run here with generate.py."""
    root = _per_arch(synthetic.make_tree(tmp_path, "base"), _FACTORIES_EXTENDED, _EXTRA_TILE)
    session = Session(root, cache_dir=tmp_path / "cache")
    data = collect_guide(session, "toy", sections=["tiles", "counts"])
    assert data.recommendation is not None, data.recommendation_problem
    union: set = set()
    for index, run in enumerate(data.recommendation.runs):
        folder = tmp_path / ("run%d" % index)
        folder.mkdir()
        union |= independent_listing(root, "toy", folder, "-f", run.filter)
    expected = read_names(union, _TOY_TILE)
    assert expected and len(union) < len(independent_listing(root, "toy", tmp_path))
    page = guide_markdown(data, sections=["tiles"])
    kept: Tally = Counter()
    for line in page.splitlines():
        if line.startswith("| `gfx"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            for tile, _, count in _KEPT.findall(cells[3]):
                for dtype in _CODE.findall(cells[1]):
                    if int(count):
                        kept[(cells[0].strip("`"), dtype, cells[2].strip("`"), tile)] += int(count)
    assert kept == expected
