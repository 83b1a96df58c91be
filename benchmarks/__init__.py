"""Benchmarks: ``python -m benchmarks`` runs them all (see __main__.py)."""
