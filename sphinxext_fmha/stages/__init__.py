"""The stages between a CK tree and a guide's data, each a function from typed inputs to
a typed artifact; the :class:`~sphinxext_fmha.session.Session` keeps their results (one
store) and runs them. Nothing here imports the session. No Sphinx imports here."""
