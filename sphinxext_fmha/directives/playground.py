"""``.. fmha-filter-playground:: API`` -- try a ``-f`` filter in the page.

HTML builders get a form (``static/fmha-playground.js`` applies the filter as the
tree's generate.py does, from embedded data; added only to pages that hold one); the
other builders a static note with the command and a link.
"""

from __future__ import annotations

import html
import urllib.parse
from typing import Any, Dict, List, Optional

from docutils import nodes

from ..errors import WarningType
from ..guide import collect_playground
from ..render.nodes import fmha_playground_link
from ..render.playground_data import parts_explained, playground_data, to_script_json
from .sphinx_glue import OPTION_SPEC, FmhaDirective, logger

__all__ = ["FilterPlaygroundDirective", "fmha_playground", "setup_playground", "JS_FILE", "is_interactive"]

JS_FILE = "fmha-playground.js"
#: Where the static note of non-HTML builders points to for the pattern syntax.
FNMATCH_DOCS = "https://docs.python.org/3/library/fnmatch.html"


class fmha_playground(nodes.General, nodes.Element):  # noqa: N801 - docutils naming
    """A playground: ``data`` (JSON text), ``api``, ``command`` (before/after ``-f``),
    ``parts`` (sentences), ``total``; HTML visitors write the form."""


class FilterPlaygroundDirective(FmhaDirective):
    """``.. fmha-filter-playground:: API`` with the guide's generate.py options."""

    what = "FMHA filter playground"
    required_arguments = 1
    option_spec = dict(OPTION_SPEC)

    def run_fmha(self) -> List[nodes.Node]:
        api = self.arguments[0].strip()
        session, options = self.session_and_options()
        inputs = collect_playground(session, api, options)
        model = inputs.model
        if inputs.unparsed:
            self.warn(WarningType.MODEL, "%s: %d listed file names do not parse with the model's "
                      "grammar; the playground leaves them out" % (api, inputs.unparsed))
        head, tail = inputs.command
        data = playground_data(model, inputs.parsed, inputs.traits, (head, tail), inputs.followers)
        logger.verbose("[fmha] %s: filter playground for %s", self.env.docname, api)
        self.env.metadata[self.env.docname]["fmha-playground"] = True
        node = fmha_playground(
            "", api=api, data=to_script_json(data), command=[head, tail],
            parts=parts_explained(model), total=data["total"], node_id=nodes.make_id(
                "fmha-playground-%s-%d" % (api, self.env.new_serialno("fmha-playground"))))
        self.set_source_info(node)
        return [node]


# ------------------------------------------------------------------------ HTML


def visit_playground_html(self: Any, node: fmha_playground) -> None:
    esc = html.escape
    api = node["api"]
    node_id = node["node_id"]
    input_id = node_id + "-input"
    head, tail = node["command"]
    parts = "".join("<li>%s</li>" % esc(text) for text in node["parts"])
    self.body.append(
        '<div class="fmha-playground" id="%(id)s" data-fmha-api="%(api)s">\n'
        '<script type="application/json" class="fmha-playground-data">%(data)s</script>\n'
        '<form class="fmha-pg-form" role="search" aria-label="-f filter for %(api)s">\n'
        '<label for="%(input)s">generate.py <code>-a %(api)s -f</code></label>\n'
        '<input class="fmha-pg-input" id="%(input)s" type="text" spellcheck="false" '
        'autocomplete="off" autocapitalize="off" placeholder="*_d128_*" '
        'aria-describedby="%(id)s-parts"/>\n'
        '<button class="fmha-pg-apply" type="submit">Apply</button>\n'
        '</form>\n'
        '<ul class="fmha-pg-parts" id="%(id)s-parts">%(parts)s</ul>\n'
        '<div class="fmha-pg-live" hidden>\n'
        '<div class="fmha-pg-result" aria-live="polite" data-fmha-count="%(total)d"></div>\n'
        '<p class="fmha-pg-cmd-label">The command (<a class="fmha-pg-share" href="#%(id)s">'
        'link to this filter</a>):</p>\n'
        '<div class="fmha-pg-command highlight"><pre><code>%(command)s</code></pre></div>\n'
        '<button class="fmha-pg-copy" type="button" hidden>Copy the command</button> '
        '<span class="fmha-pg-copied" role="status"></span>\n'
        '</div>\n'
        '<noscript><p>The playground needs JavaScript; without it, run '
        '<code>%(command)s</code> with <code>-f PATTERN</code>.</p></noscript>\n'
        % {"id": esc(node_id), "api": esc(api), "data": node["data"], "input": esc(input_id),
           "parts": parts, "total": node["total"], "command": esc(head + " " + tail)})
    raise nodes.SkipNode


# --------------------------------------------------------------- other builders


def static_note(node: fmha_playground, url: Optional[str]) -> nodes.Element:
    """The note non-HTML builders show instead of the form."""
    head, tail = node["command"]
    command = "%s -f PATTERN %s" % (head, tail)
    para = nodes.paragraph()
    para += nodes.Text("Filter playground for %s: in the HTML version of this page you can "
                       "try a -f pattern and see what it keeps. Here, run " % node["api"])
    para += nodes.literal(command, command)
    para += nodes.Text(" (the pattern syntax of Python's fnmatch: ")
    para += nodes.reference(FNMATCH_DOCS, FNMATCH_DOCS, refuri=FNMATCH_DOCS)
    para += nodes.Text(")")
    if url:
        para += nodes.Text("; the interactive page: ")
        para += nodes.reference(url, url, refuri=url)
    para += nodes.Text(".")
    note = nodes.note()
    note += para
    note["classes"].append("fmha-playground-note")
    note.source, note.line = node.source, node.line
    return note


def is_interactive(builder: Any) -> bool:
    """HTML pages a browser shows with their scripts (not e-books)."""
    return getattr(builder, "format", "") == "html" and not builder.name.startswith("epub")


def _resolve(app: Any, doctree: nodes.document, docname: str) -> None:
    """doctree-resolved: playground links resolved (or removed), static notes elsewhere."""
    interactive = is_interactive(app.builder)
    targets: Dict[str, str] = {}
    if interactive:
        for playground in doctree.findall(fmha_playground):
            targets.setdefault(playground["api"], playground["node_id"])
    for link in list(doctree.findall(fmha_playground_link)):
        target = targets.get(link["api"])
        if target is None:
            link.parent.remove(link)
            continue
        before, text = link.children[0], link.children[1]
        reference = nodes.reference(
            "", "", nodes.Text(text.astext()), internal=True,
            refuri="?fmha-filter=%s#%s" % (urllib.parse.quote(link["pattern"], safe=""), target),
            classes=["fmha-playground-link"])
        link.replace_self([nodes.Text(before.astext()), reference])
    if interactive:
        return
    base = (getattr(app.config, "html_baseurl", "") or "").rstrip("/")
    for node in list(doctree.findall(fmha_playground)):
        # latex and the like assemble several documents: the node's own page
        page = (app.env.path2doc(node.source) if node.source else None) or docname
        url = "%s/%s.html" % (base, page) if base else None
        node.replace_self(static_note(node, url))


def _add_script(app: Any, pagename: str, templatename: str, context: Dict[str, Any],
                doctree: Any) -> None:
    """html-page-context: the script only on the pages that hold a playground."""
    if not is_interactive(app.builder):
        return
    metadata = app.env.metadata.get(pagename, {})
    if metadata.get("fmha-playground") or (doctree is not None
                                           and any(doctree.findall(fmha_playground))):
        app.add_js_file(JS_FILE)


def setup_playground(app: Any) -> None:
    app.add_node(fmha_playground, html=(visit_playground_html, None))
    app.add_node(fmha_playground_link)
    app.add_directive("fmha-filter-playground", FilterPlaygroundDirective)
    app.connect("doctree-resolved", _resolve)
    app.connect("html-page-context", _add_script)
