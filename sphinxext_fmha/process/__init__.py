"""Starting generate.py and our own scripts in child processes, and caching their results."""
