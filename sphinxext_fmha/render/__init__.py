"""Renderers: turn what a guide shows (:mod:`sphinxext_fmha.guide_data`) into documents.

No analysis, processes or Session: :mod:`.guide_blocks` orders the sections,
:mod:`.sections` builds each as :mod:`.ir` blocks, :mod:`.nodes` and :mod:`.markdown`
render them.
"""
