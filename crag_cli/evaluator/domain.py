"""An evaluator's domain as it reads it: the questions it was trained on, and how near a question is to them.

How a domain is fitted and stored is :mod:`crag_cli.train.domain`'s; this module
is what scoring needs, so that the evaluator imports nothing of training.
"""

from __future__ import annotations

import numpy as np

DOMAIN_FILE = "domain-questions.npy"


def nearest_cosines(embeddings: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Each row's cosine to its nearest row of ``known`` (both L2-normalised).

    Parameters
    ----------
    embeddings : ndarray, shape (n, dim)
    known : ndarray, shape (m, dim)

    Returns
    -------
    ndarray, shape (n,)
        ``-1`` for every row when ``known`` is empty.

    Examples
    --------
    >>> known = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> [round(c, 2) for c in nearest_cosines(np.array([[0.6, 0.8], [1.0, 0.0]]), known).tolist()]
    [0.8, 1.0]
    """
    if len(known) == 0:
        return np.full(len(embeddings), -1.0)
    return (np.asarray(embeddings, dtype=np.float32) @ np.asarray(known, dtype=np.float32).T).max(axis=1)
