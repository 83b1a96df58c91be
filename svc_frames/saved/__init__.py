"""Saved frames: the directory layout, Parquet and CSV files, the streaming export,
push, and the whole-application snapshot (DuckDB or Parquet datasets)."""
