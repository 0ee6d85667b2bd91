"""The Sphinx glue: ``setup()``, configuration values and the directives."""

from .extension import setup

__all__ = ["setup"]
