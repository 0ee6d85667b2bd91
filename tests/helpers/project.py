"""Small Sphinx projects for the tests: written to a folder, built with
:class:`sphinx.testing.util.SphinxTestApp` (Sphinx's own test harness: it saves and
restores the docutils registries and ``sys.path`` around each app)."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from sphinx.testing.util import SphinxTestApp

#: the build date of the pages the tests build (``SOURCE_DATE_EPOCH``): 2023-11-14
EPOCH = "1700000000"

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def write_project(src: Path, pages: Dict[str, str], conf: str = "", ck_root: Optional[Path] = None,
                  extra_conf: str = "") -> Path:
    """``conf.py`` (our extension, MyST, sphinx-design) and ``pages`` in ``src``; an
    ``index.rst`` with a toctree of the pages when none is given."""
    src.mkdir(parents=True, exist_ok=True)
    lines = [
        'extensions = ["myst_parser", "sphinx_design", "sphinxext_fmha"]',
        'project = "fmha-test"',
        'copyright = "the sphinxext-fmha authors"',
        'version = release = "1.0"',
        'exclude_patterns = ["_build"]',
        "suppress_warnings = []",
        "show_warning_types = True",  # the default from Sphinx 8 on; shows [fmha.<kind>]
    ]
    if ck_root is not None:
        lines.append("fmha_ck_root = %r" % str(ck_root))
    lines.append(conf)
    lines.append(extra_conf)
    (src / "conf.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    names = [n.rsplit(".", 1)[0] for n in pages if n.rsplit(".", 1)[0] != "index"]
    if "index.rst" not in pages and "index.md" not in pages:
        pages = dict(pages)
        pages["index.rst"] = "Index\n=====\n\n.. toctree::\n\n" + "".join(
            "   %s\n" % n for n in sorted(names))
    for name, text in pages.items():
        (src / name).write_text(text, encoding="utf-8")
    return src


def build(src: Path, builder: str = "html", out: Optional[Path] = None, parallel: int = 0,
          confoverrides: Optional[dict] = None) -> Tuple[SphinxTestApp, str, str]:
    """Build ``src`` with ``builder`` into ``out/<builder>`` (doctrees in ``out/doctrees``,
    kept between builds: incremental); (app, status, warnings) without colours."""
    status, warning = io.StringIO(), io.StringIO()
    app = SphinxTestApp(builder, srcdir=src, builddir=out or (src / "_build"),
                        confoverrides=confoverrides or {}, status=status, warning=warning,
                        parallel=parallel)
    try:
        app.build()
    finally:
        app.cleanup()
    # Sphinx ends a colored progress line ("reading sources... [ 40%] page") with a carriage
    # return, so that the next line overwrites it; a line of ours may follow it directly
    return (app, _ANSI.sub("", status.getvalue()).replace("\r", "\n"),
            _ANSI.sub("", warning.getvalue()))


def located(warnings: str, path: Path) -> List[Tuple[int, Optional[str], str]]:
    """[(line, fmha warning kind, body)] of the warnings located in ``path``."""
    found = []
    # warnings can span lines (command, stderr): split on the location prefix
    pattern = re.compile(r"^%s:(\d+): WARNING: " % re.escape(str(path)), re.M)
    starts = list(pattern.finditer(warnings))
    for index, match in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(warnings)
        body = warnings[match.end():end].strip()
        kind = re.search(r"\[fmha\.([a-z-]+)\]\s*$", body)
        found.append((int(match.group(1)), kind.group(1) if kind else None, body))
    return found


def build_page(tmp_path: Path, ck_root: Path, page: str, cache: Path):
    """An html build of one page ``page.rst`` on ``ck_root``: the app, its warnings and
    those located in the page (see :func:`located`)."""
    src = write_project(tmp_path / "src", {"page.rst": page}, ck_root=ck_root,
                        conf="fmha_cache_dir = %r" % str(cache))
    app, _status, warnings = build(src, "html")
    return app, warnings, located(warnings, src / "page.rst")


def broken_tree(synthetic_tree, how: str) -> Path:
    """A synthetic tree whose generate.py crashes, hangs, or rejects a filter with
    'reject' in it (after parsing its arguments)."""
    root = synthetic_tree("base")
    generate = root / "example" / "ck_tile" / "01_fmha" / "generate.py"
    text = generate.read_text(encoding="utf-8")
    anchor = "    args = parser.parse_args()\n"
    assert anchor in text
    inserts = {
        "crash": "    raise RuntimeError('synthetic generate.py crash for the tests')\n",
        "hang": "    import time\n    time.sleep(120)\n",
        "reject": "    if 'reject' in args.filter:\n"
                  "        parser.error('invalid filter %r (synthetic)' % args.filter)\n",
    }
    generate.write_text(text.replace(anchor, anchor + inserts[how]), encoding="utf-8")
    return root
