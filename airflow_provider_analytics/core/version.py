"""The package's version, in a module that imports nothing: the client's ``User-Agent`` and
the provider's metadata read it without importing the package's entry point, and the build
reads it for the distribution (``[tool.hatch.version]``)."""

from __future__ import annotations

__version__ = "0.2.0"
