"""Action: which knowledge the reader reads, from the evaluator's scores (CRAG section 4.3-4.5)."""
