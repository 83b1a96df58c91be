"""Loaded frames kept current: ``refresh`` (policy.py) with its stamp window, deletion
search and merge, and the on-disk cache built on it (cache.py)."""
