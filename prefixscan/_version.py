"""The package version (a leaf module, so that any layer can read it without
importing the package's public API)."""

__version__ = "0.1.0"
