"""sphinxext-fmha: kernel selection guides for Composable Kernel's FMHA codegen."""

__version__ = "0.1.0"


def setup(app):  # pragma: no cover - thin Sphinx entry point
    from .directives.extension import setup as _setup

    return _setup(app)
