"""``extensions = ["sphinxext_fmha"]``: the ``fmha_*`` configuration values
(:mod:`.config`), the directives, the transforms that resolve a guide's sections
(with stable ids ``fmha-<api>-<section>``) and the file-name diagram per builder, and
``static/fmha.css`` for HTML builders."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

from docutils import nodes
from docutils.transforms import Transform
from sphinx.transforms.post_transforms import SphinxPostTransform

from .. import __version__
from ..cppapi.allocation import freeze_at_exit
from ..locate import forget_roots
from ..render.nodes import fmha_diagram, fmha_guide, fmha_section
from .kernel_guide import DIRECTIVES
from .page_scan import setup_ahead
from .playground import JS_FILE, is_interactive, setup_playground
from .sphinx_glue import add_config_values, setup_strict, validate_config

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
CSS_FILE = "fmha.css"

class ResolveGuideSections(Transform):
    """Turn :class:`fmha_guide`/:class:`fmha_section` into sections, rubrics or content:
    ``auto``, sections where the guide sits in a section followed only by sections (or
    invisible nodes), so the structure stays valid, else rubrics; ``section``, sections
    under a section or the document; ``rubric``/``none``: rubrics / no titles."""

    default_priority = 200

    def apply(self, **kwargs: Any) -> None:
        for guide in list(self.document.findall(fmha_guide)):
            mode = guide.get("headings", "auto")
            parent = guide.parent
            if mode in ("auto", "section"):
                mode = "section" if self._sections_fit(guide, parent, mode) else "rubric"
            replacement: List[nodes.Node] = []
            prefix = nodes.make_id("fmha-%s" % guide.get("api", "guide"))
            renamed: Dict[str, str] = {}
            for child in guide.children:
                if not isinstance(child, fmha_section):
                    replacement.append(child)
                    continue
                content = list(child.children)
                title = child["title"]
                base_id = "%s-%s" % (prefix, child["name"])
                node_id = self._unique_id(base_id)
                if node_id != base_id:
                    renamed[base_id] = node_id
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
            if renamed:
                _rename_anchors(replacement, renamed)
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


def _rename_anchors(content: List[nodes.Node], renamed: Dict[str, str]) -> None:
    """The same guide twice on a page: its second copy's sections got new ids
    (``...-fields-2``); the jump targets inside them and the links to those targets
    follow, so no id is written twice and every link stays in its own copy."""
    bases = sorted(renamed, key=len, reverse=True)  # the longest section id first

    def new_id(old: str) -> str:
        for base in bases:
            if old == base or old.startswith(base + "-"):
                return renamed[base] + old[len(base):]
        return old

    for block in content:
        if not isinstance(block, nodes.Element):
            continue
        for element in block.findall(nodes.Element):
            if isinstance(element, nodes.section) or (
                    isinstance(element, nodes.rubric) and "fmha-rubric" in element["classes"]):
                continue  # the section's own id is already the new one
            element["ids"] = [new_id(i) for i in element["ids"]]
            if element.get("refid"):
                element["refid"] = new_id(element["refid"])


class ResolveDiagrams(SphinxPostTransform):
    """HTML builders (``formats``, not the deprecated ``self.app``): the diagram's raw HTML."""

    default_priority = 300
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(fmha_diagram)):
            node.replace_self(nodes.raw("", node["html"], format="html"))


class DiagramFallback(SphinxPostTransform):
    """Every other builder (after :class:`ResolveDiagrams`): the literal-block fallback."""

    default_priority = 301

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(fmha_diagram)):
            node.replace_self(list(node.children))


def _add_static_file(app: Any, name: str) -> None:
    """Copy ``static/<name>`` to the output's ``_static`` (one file, not the folder: an
    EPUB gets only the files its builder uses)."""
    static = str(STATIC_DIR / name)
    if static not in app.config.html_static_path:
        app.config.html_static_path.append(static)


def _add_static(app: Any) -> None:
    if getattr(app.builder, "format", "") != "html":
        return
    _add_static_file(app, CSS_FILE)
    app.add_css_file(CSS_FILE)
    if is_interactive(app.builder):  # the playground's script: not for EPUB readers
        _add_static_file(app, JS_FILE)


def setup(app: Any) -> Dict[str, Any]:
    try:
        app.setup_extension("sphinx_design")
    except Exception:  # pragma: no cover - sphinx-design is a dependency; dropdowns degrade
        pass
    add_config_values(app)
    for node_class in (fmha_guide, fmha_section, fmha_diagram):
        app.add_node(node_class)
    for name, directive in DIRECTIVES.items():
        app.add_directive(name, directive)
    setup_playground(app)
    app.add_transform(ResolveGuideSections)
    app.add_post_transform(ResolveDiagrams)
    app.add_post_transform(DiagramFallback)
    app.connect("config-inited", validate_config)
    setup_strict(app)
    setup_ahead(app)
    freeze_at_exit()  # sphinx-build exits without the collector walking what is alive
    app.connect("builder-inited", _add_static)
    app.connect("builder-inited", forget_roots)
    return {
        "version": __version__,
        "env_version": 1,
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }


__all__ = ["setup", "STATIC_DIR", "ResolveGuideSections", "ResolveDiagrams",
           "DiagramFallback"]
