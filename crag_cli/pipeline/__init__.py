"""The pipeline: CRAG's Algorithm 1 (and the baselines), its modes, generation and result."""
