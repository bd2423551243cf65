"""crag: corrective retrieval-augmented generation (CRAG, Yan et al. 2024) from the command line."""

__version__ = "0.1.0"
