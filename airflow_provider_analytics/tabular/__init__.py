"""Deprecated aliases of modules that moved to ``reports`` (removed in 0.3.0)."""
