"""The package's version, in a module of its own so that modules inside the package (the session's
metadata, merge, slice) can name it without importing the package's `__init__`."""

__version__ = "0.1.0"
