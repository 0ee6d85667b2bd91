"""Analysis of a CK FMHA codegen tree (no Sphinx imports here)."""
