"""Renderers: turn models, filter checks and recommendations into documents.

* :mod:`.collect` gathers what a guide shows from a Session (and classifies failures);
* :mod:`.guide` writes the guide once, as the small document model of :mod:`.ir`;
* :mod:`.nodes` renders it as docutils nodes (no Sphinx imports);
* :mod:`.markdown` renders it as GitHub-flavoured Markdown
  (:func:`~sphinxext_fmha.render.markdown.render_guide_markdown`).
"""

from .collect import (
    SECTIONS,
    GuideData,
    Problem,
    collect_guide,
    parse_options,
    parse_sections,
    problem_of,
)

__all__ = [
    "SECTIONS",
    "GuideData",
    "Problem",
    "collect_guide",
    "parse_options",
    "parse_sections",
    "problem_of",
    "render_guide_markdown",
]


def render_guide_markdown(session, api, options=None, sections=None):
    """See :func:`sphinxext_fmha.render.markdown.render_guide_markdown`."""
    from ..analysis.analyze import Options
    from .markdown import render_guide_markdown as _render

    return _render(session, api, options if options is not None else Options(), sections)
