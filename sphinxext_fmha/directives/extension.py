"""``extensions = ["sphinxext_fmha"]``: configuration values, directives, transforms.

* Config values (all ``fmha_*``, rebuild ``env`` unless noted): ``fmha_ck_root``,
  ``fmha_targets``, ``fmha_mask``, ``fmha_receipt``, ``fmha_optdim``,
  ``fmha_cache_dir`` (rebuild ``""``), ``fmha_python``, ``fmha_timeout`` (900 s),
  ``fmha_strict``.
* A read-time transform resolves each guide's sections into real sections (when the
  directive sits directly in a section and only sections follow it), rubrics, or bare
  content, and gives them stable ids ``fmha-<api>-<section>``.
* A post-transform keeps the file-name diagram's HTML for HTML builders and its
  literal-block fallback (the name with a numbered ruler) for every other builder.
* ``static/fmha.css`` is added for HTML builders.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePath
from typing import Any, Dict, List

from docutils import nodes
from docutils.transforms import Transform
from sphinx.transforms.post_transforms import SphinxPostTransform

from .. import __version__
from ..render.nodes import fmha_diagram, fmha_guide, fmha_section
from .common import forget_roots
from .guide import ApiListDirective, FilenameDirective, FilterCheckDirective, KernelGuideDirective
from .playground import setup_playground

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
CSS_FILE = "fmha.css"

_PATH_TYPES = (str, type(Path()), PurePath, type(None))

#: name -> (default, rebuild, types)
CONFIG_VALUES: Dict[str, Any] = {
    "fmha_ck_root": (None, "env", _PATH_TYPES),
    "fmha_targets": (None, "env", (str, list, tuple, type(None))),
    "fmha_mask": (None, "env", (str, type(None))),
    "fmha_receipt": (None, "env", (int, str, type(None))),
    "fmha_optdim": (None, "env", (str, int, list, tuple, type(None))),
    "fmha_cache_dir": (None, "", _PATH_TYPES),
    "fmha_python": (None, "env", (str, type(None))),
    "fmha_timeout": (900, "env", (int, float)),
    "fmha_strict": (False, "env", (bool,)),
}


class ResolveGuideSections(Transform):
    """Turn :class:`fmha_guide`/:class:`fmha_section` into sections, rubrics or content.

    ``auto``: real sections when the guide sits directly in a section and nothing but
    sections (or invisible nodes) follows it, so the document structure stays valid;
    rubrics otherwise.  ``section``: real sections whenever the parent is a section or
    the document.  ``rubric``/``none``: always rubrics / no titles.
    """

    default_priority = 200

    def apply(self, **kwargs: Any) -> None:
        for guide in list(self.document.findall(fmha_guide)):
            mode = guide.get("headings", "auto")
            parent = guide.parent
            if mode in ("auto", "section"):
                mode = "section" if self._sections_fit(guide, parent, mode) else "rubric"
            replacement: List[nodes.Node] = []
            prefix = nodes.make_id("fmha-%s" % guide.get("api", "guide"))
            for child in guide.children:
                if not isinstance(child, fmha_section):
                    replacement.append(child)
                    continue
                content = list(child.children)
                title = child["title"]
                node_id = self._unique_id("%s-%s" % (prefix, child["name"]))
                if mode == "section":
                    section = nodes.section("", ids=[node_id], classes=["fmha-section"])
                    section += nodes.title(title, title)
                    section.extend(content)
                    section.source, section.line = guide.source, guide.line
                    self.document.ids[node_id] = section
                    replacement.append(section)
                elif mode == "rubric":
                    rubric = nodes.rubric(title, title, ids=[node_id], classes=["fmha-rubric"])
                    self.document.ids[node_id] = rubric
                    replacement.append(rubric)
                    replacement.extend(content)
                else:
                    replacement.extend(content)
            guide.replace_self(replacement or [nodes.comment()])

    def _unique_id(self, base: str) -> str:
        candidate, index = base, 1
        while candidate in self.document.ids:
            index += 1
            candidate = "%s-%d" % (base, index)
        return candidate

    @staticmethod
    def _sections_fit(guide: nodes.Node, parent: nodes.Node, mode: str) -> bool:
        if mode == "section":
            return isinstance(parent, (nodes.section, nodes.document))
        if not isinstance(parent, nodes.section):
            return False
        index = parent.index(guide)
        invisible = (nodes.section, nodes.target, nodes.comment, nodes.system_message,
                     nodes.substitution_definition, fmha_guide)
        return all(isinstance(sibling, invisible) for sibling in parent.children[index + 1:])


class ResolveDiagramsHtml(SphinxPostTransform):
    """HTML builders: the diagram becomes its raw HTML."""

    default_priority = 300
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(fmha_diagram)):
            node.replace_self(nodes.raw("", node["html"], format="html"))


class ResolveDiagrams(SphinxPostTransform):
    """Every other builder (runs after :class:`ResolveDiagramsHtml`): the fallback,
    a literal block with the name and a numbered ruler."""

    default_priority = 301

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(fmha_diagram)):
            node.replace_self(list(node.children))


def _resolve_paths(app: Any, config: Any) -> None:
    """Make ``fmha_ck_root``/``fmha_cache_dir`` absolute (relative to conf.py's folder)
    once, so the directives need no application object."""
    for name in ("fmha_ck_root", "fmha_cache_dir"):
        value = getattr(config, name)
        if value is None or str(value) == "":
            continue
        path = Path(os.path.expanduser(str(value)))
        if not path.is_absolute():
            path = Path(app.confdir) / path
        setattr(config, name, str(path))


def _add_static(app: Any) -> None:
    if getattr(app.builder, "format", "") != "html":
        return
    static = str(STATIC_DIR)
    if static not in app.config.html_static_path:
        app.config.html_static_path.append(static)
    app.add_css_file(CSS_FILE)


def setup(app: Any) -> Dict[str, Any]:
    try:
        app.setup_extension("sphinx_design")
    except Exception:  # pragma: no cover - sphinx-design is a dependency; dropdowns degrade
        pass
    for name, (default, rebuild, types) in CONFIG_VALUES.items():
        app.add_config_value(name, default, rebuild, types=types)
    for node_class in (fmha_guide, fmha_section, fmha_diagram):
        app.add_node(node_class)
    app.add_directive("fmha-kernel-guide", KernelGuideDirective)
    app.add_directive("fmha-filter-check", FilterCheckDirective)
    app.add_directive("fmha-api-list", ApiListDirective)
    app.add_directive("fmha-filename", FilenameDirective)
    setup_playground(app)
    app.add_transform(ResolveGuideSections)
    app.add_post_transform(ResolveDiagramsHtml)
    app.add_post_transform(ResolveDiagrams)
    app.connect("config-inited", _resolve_paths)
    app.connect("builder-inited", _add_static)
    app.connect("builder-inited", forget_roots)
    return {
        "version": __version__,
        "env_version": 1,
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }


__all__ = ["setup", "CONFIG_VALUES", "STATIC_DIR", "ResolveGuideSections", "ResolveDiagrams",
           "ResolveDiagramsHtml"]
