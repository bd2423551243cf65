"""Join cross-fitted PopQA runs: every dev question answered by an evaluator that never saw it.

    python benchmarks/crossfit.py --runs OUT1 OUT2 ... [--modes crag,rag-k3,rag-k5,rag] --out OUTDIR

Cross-fitting, step by step (K folds; fold 1 is the 200-question held-out part
of ``split_popqa.py``):

1. ``python benchmarks/split_popqa.py --data DIR --test 200 --folds K --out SPLIT``
2. for each fold I: ``crag train-evaluator SPLIT/fold-I/train.jsonl --index IX
   --out EV-I`` (the default evaluator's own command, on the other folds' questions;
   EV-1 is the default's command run today: the shipped default had also seen
   three held-out questions' twins, which ``split_popqa.py`` now leaves out);
3. for each fold I: ``python benchmarks/popqa.py --data DIR --questions
   SPLIT/fold-I/test.jsonl --modes crag,rag-k3,rag-k5,rag --model MODEL
   --evaluator EV-I --out OUT-I`` (plain RAG does not evaluate: the same for every fold);
4. this script, over OUT-1 … OUT-K.

Each run folder holds what ``benchmarks/popqa.py`` writes: ``questions.jsonl``,
``records-MODE.jsonl`` and ``index/``. The runs' questions must not overlap;
every run must have records for every question of its own, for every mode
asked. Writes ``OUTDIR/results.json``, ``results.md`` (``popqa.py``'s tables
over all the runs' questions, paired statistics included, and a table per
fold: its questions, its evaluator, each mode's accuracy) and ``results.png``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from popqa import MODES, chart, paired, parse_modes, summarise, table  # noqa: E402  (the benchmark's own metrics)

from crag_cli.errors import CragError  # noqa: E402
from crag_cli.action.match import holds_answer  # noqa: E402


def read_run(folder: Path, modes: list[str]) -> tuple[dict[str, dict], dict[str, list[dict]], dict[str, str]]:
    """``(questions, records per mode, passage texts)`` of one ``popqa.py`` run folder.

    The records of each mode are its first ones, one per question, in the
    run's question order; ``ValueError`` when a mode's records do not cover them.
    """
    from crag_cli.index import BM25Index

    lines = [x for x in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    questions = {q["id"]: q for q in map(json.loads, lines)}
    ids = list(questions)
    records = {}
    for mode in modes:
        path = folder / f"records-{mode}.jsonl"
        rows = (
            [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()] if path.exists() else []
        )
        if [r.get("id") for r in rows[: len(ids)]] != ids:
            raise ValueError(f"{path}: no records for all {len(ids)} questions of {folder} in their order")
        records[mode] = rows[: len(ids)]
    index = BM25Index.load(folder / "index")
    try:
        passages = {p.id: p.text for p in index.passages}
    finally:
        index.passages.close()
    return questions, records, passages


def join(runs: list[Path], modes: list[str]) -> tuple[dict, list[dict]]:
    """popqa's results over all the runs' questions, and one row per run (fold).

    Returns
    -------
    (dict, list of dict)
        Per mode, :func:`popqa.summarise` of the joined records, with ``vs``
        (:func:`popqa.paired` against each plain-RAG mode) for the other modes;
        per run, ``run``, ``n``, ``evaluators`` (what its evaluating modes'
        records name) and ``accuracy`` per mode.
    """
    questions: dict[str, dict] = {}
    passages: dict[str, str] = {}
    joined: dict[str, list[dict]] = {m: [] for m in modes}
    folds = []
    for run in runs:
        qs, records, texts = read_run(run, modes)
        overlap = questions.keys() & qs.keys()
        if overlap:
            raise ValueError(f"{run} asks questions another run asked too: {sorted(overlap)[:3]} ...")
        questions.update(qs)
        passages.update(texts)
        row = {"run": str(run), "n": len(qs), "evaluators": [], "accuracy": {}}
        for mode, rows in records.items():
            for r in rows:
                r["correct_word"] = holds_answer(r.get("answer") or "", qs[r["id"]]["answers"])
            joined[mode] += rows
            row["accuracy"][mode] = round(sum(r["correct_word"] for r in rows) / len(rows), 4) if rows else None
            if any(r.get("action") for r in rows):
                row["evaluators"] += sorted({str(r.get("evaluator")) for r in rows} - set(row["evaluators"]))
        folds.append(row)
    results = {mode: summarise(rows, passages, questions) for mode, rows in joined.items()}
    baselines = [m for m in modes if MODES[m][:2] == ["--mode", "rag"]]
    for mode in modes:
        if mode not in baselines and baselines:
            results[mode]["vs"] = {b: paired(joined[mode], joined[b]) for b in baselines}
    return results, folds


def fold_table(folds: list[dict], modes: list[str]) -> str:
    """Markdown: per fold, its questions, its evaluator and each mode's accuracy."""
    lines = [
        "",
        "Per fold (each answered with the evaluator named, trained without the fold's questions):",
        "",
        "| run | questions | evaluator | " + " | ".join(modes) + " |",
        "|---|---|---|" + "---|" * len(modes),
    ]
    for f in folds:
        acc = " | ".join(f"{f['accuracy'][m]:.1%}" for m in modes)
        lines.append(f"| {f['run']} | {f['n']} | {', '.join(f['evaluators']) or '–'} | {acc} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, nargs="+", required=True, help="popqa.py OUT folders, one per fold")
    parser.add_argument("--modes", default="crag,rag-k3,rag-k5,rag")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    modes = parse_modes(parser, args.modes)
    try:
        results, folds = join(args.runs, modes)
    except (OSError, ValueError, CragError) as exc:
        parser.error(str(exc))
    args.out.mkdir(parents=True, exist_ok=True)
    text = table(results) + fold_table(folds, modes)
    (args.out / "results.json").write_text(json.dumps({"modes": results, "folds": folds}, indent=1) + "\n")
    (args.out / "results.md").write_text(text)
    chart(results, args.out / "results.png")
    print(text)


if __name__ == "__main__":
    main()
