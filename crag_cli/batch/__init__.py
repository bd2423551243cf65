"""``crag batch`` as a library: the run over a question file, its output guarantees, its summary.

Guarantees (docs/commands.md, "crag batch"):

* one record per non-blank input line, in input order; a bad line is an error record;
* with ``-o OUT`` the records go to ``OUT.partial`` as they are done and the
  file is renamed to ``OUT`` when the batch ends, so ``OUT`` is always a whole
  run's output; ``OUT.run.json`` (the run manifest) records what produced it;
* ``--resume`` goes on after the records already written, and refuses a file
  produced by other settings, naming the setting; ``--retry-errors`` also redoes
  the records that ended in an error;
* crag never writes over its input, and never over a file it did not write
  (one without its run manifest) unless told to (``--overwrite``).

Modules: ``identity`` (what produced the records), ``output`` (the output file
and resume), ``executors`` (this process, workers, Ray), ``loop`` (the run
and its summary).
"""

from .executors import (
    GROUP_LINES,
    Answered,
    Answerer,
    InFlight,
    InProcess,
    RayPool,
    WorkerPool,
    answer,
    answer_group,
    groups,
    iter_group,
    load_models,
    ray_missing,
    split_threads,
)
from .identity import (
    RESOLVED_GROUPS,
    evaluator_fingerprint,
    identity_mismatch,
    index_fingerprint,
    run_identity,
)
from .loop import Summary, run_batch
from .output import RUN_MANIFEST_VERSION, BatchOutput, manifest_path, partial_path, read_records, read_run_manifest

__all__ = [
    "GROUP_LINES",
    "Answered",
    "Answerer",
    "InFlight",
    "InProcess",
    "RayPool",
    "WorkerPool",
    "answer",
    "answer_group",
    "groups",
    "iter_group",
    "load_models",
    "ray_missing",
    "split_threads",
    "RESOLVED_GROUPS",
    "evaluator_fingerprint",
    "identity_mismatch",
    "index_fingerprint",
    "run_identity",
    "Summary",
    "run_batch",
    "RUN_MANIFEST_VERSION",
    "BatchOutput",
    "manifest_path",
    "partial_path",
    "read_records",
    "read_run_manifest",
]
