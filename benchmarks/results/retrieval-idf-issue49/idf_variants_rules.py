import numpy as np

RULES = {
    "robertson-floor0": lambda df, n: np.log(np.maximum((n - df.astype(np.float64) + 0.5) / (df + 0.5), 1.0)),
    "lucene": lambda df, n: np.log1p((n - df.astype(np.float64) + 0.5) / (df + 0.5)),
    "robertson-floor-1e-3": lambda df, n: np.maximum(np.log((n - df.astype(np.float64) + 0.5) / (df + 0.5)), 1e-3),
}
