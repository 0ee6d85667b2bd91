"""The dataclasses of :mod:`sphinxext_fmha.model`, one module per stage's artifact."""
