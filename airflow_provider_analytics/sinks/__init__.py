"""Deprecated aliases of modules that moved to ``output`` (removed in 0.3.0)."""
