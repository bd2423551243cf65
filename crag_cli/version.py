"""crag's version: a leaf module, so that no module imports the package's ``__init__`` for it."""

__version__ = "0.2.0"
