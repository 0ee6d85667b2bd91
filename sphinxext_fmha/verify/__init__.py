"""Verification with the tree's own generate.py (no Sphinx imports here)."""
