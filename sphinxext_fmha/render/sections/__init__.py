"""One module per guide section; :mod:`..guide` puts them in order."""
