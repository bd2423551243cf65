"""The stages of crag's pipeline by name, in order: each setting belongs to one (its group, which decides the
commands that take it: :mod:`crag_cli.settings`), and each mode reads some (:mod:`crag_cli.pipeline.modes`)."""

GROUPS = ("index", "retrieval", "evaluator", "thresholds", "action", "refine", "reader", "web")
