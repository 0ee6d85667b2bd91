"""Reading the API dispatch C++ file that generate.py writes (no Sphinx, no processes)."""
