"""Renderers: turn what a guide shows (:mod:`sphinxext_fmha.guide_data`) into documents.

No analysis, no processes, no Session here: the guide service
(:mod:`sphinxext_fmha.guide`) collects the data, these modules only lay it out.

* :mod:`.guide` orders the sections; :mod:`.sections` builds each one as the small
  document model of :mod:`.ir`;
* :mod:`.nodes` renders it as docutils nodes (no Sphinx imports);
* :mod:`.markdown` renders it as GitHub-flavoured Markdown.
"""
