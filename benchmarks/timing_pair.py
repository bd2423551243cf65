"""crag against plain RAG (k = 3 unless --k), timed side by side: the same questions, the two modes taking turns.

    python benchmarks/timing_pair.py --data ../shared/bench/popqa [--questions FILE] --sample 200 [--model NAME]
                                     [--evaluator SPEC] [--k K] [--task TASK] [--web-off] [--crag SETTING=VALUE ...]
                                     --out OUTDIR

Two runs timed one after the other drift apart with the machine (on a shared
host the same prompts took 1.2 to 1.4 times as long an hour later), so this
script opens both pipelines in one process (``crag_cli.open``: ``crag`` with the
web stand-in, or with the web off under ``--web-off``, ``rag`` with ``top_k=K``; each loads its own copy of the models
once) and answers the questions in groups of ``crag_cli.batch.GROUP_LINES``,
each group by both modes in turn, the first mode alternating from group to
group. Whatever slows the machine slows both. It writes each mode's records
(as ``crag batch`` writes them), ``results.json`` and ``results.md``: mean
seconds per question per mode and stage, the ratio crag / rag, and the ratio's
spread over the groups (bootstrap 95% interval). Questions are the same spread
sample as ``benchmarks/popqa.py --sample N``; ``--task`` is both modes' task
(crag's default otherwise); ``--crag read_share=0.6`` sets a setting of crag's
mode alone (repeatable; the value is read as JSON, else as text).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from popqa import spread_sample  # noqa: E402

from crag_cli.reader.prompts import TASK_CHOICES  # noqa: E402
import data  # noqa: E402  (a path under benchmarks/DOMAIN/ is unpacked on demand)

SHOWN_STAGES = ("evaluate", "refine", "rewrite", "search", "generate")  # the stage columns of results.md


def bootstrap_ratio(a: np.ndarray, b: np.ndarray, n: int = 10000, seed: int = 0) -> tuple[float, float]:
    """95% interval of ``sum(a) / sum(b)`` over resampled groups (``a``, ``b``: seconds per group)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(n, len(a)))
    ratios = a[idx].sum(axis=1) / b[idx].sum(axis=1)
    return float(np.percentile(ratios, 2.5)), float(np.percentile(ratios, 97.5))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=data.on_demand,
        required=True,
        help="bench folder: docs/ (indexed as crag index reads it) or corpus.jsonl, web.jsonl, questions.dev.jsonl",
    )
    parser.add_argument(
        "--questions", type=data.on_demand, default=None, help="ask these questions (default DATA/questions.dev.jsonl)"
    )
    parser.add_argument("--sample", type=int, default=None, help="N questions spread over the file")
    parser.add_argument("--model", default=None, help="reader (default: crag's default)")
    parser.add_argument(
        "--evaluator",
        default=None,
        help="the evaluator: crag's, and with --task auto plain RAG's domain (default: crag's default)",
    )
    parser.add_argument("--k", type=int, default=3, help="plain RAG's passages (default 3)")
    parser.add_argument("--task", choices=TASK_CHOICES, default=None, help="both modes' task (default: crag's default)")
    parser.add_argument("--web-off", action="store_true", help="crag with the web off (crag's default)")
    parser.add_argument("--crag", action="append", default=[], metavar="SETTING=VALUE", help="a setting of crag's mode")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rag = f"rag-k{args.k}"
    crag_settings = {}
    for item in args.crag:
        name, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--crag {item!r}: write SETTING=VALUE")
        try:
            crag_settings[name] = json.loads(value)
        except json.JSONDecodeError:
            crag_settings[name] = value
    modes = {"crag": {"mode": "crag"} | crag_settings, rag: {"mode": "rag", "top_k": args.k}}

    import crag_cli
    from crag_cli.batch import GROUP_LINES
    from crag_cli.errors import CragError
    from crag_cli.action.evaltest import in_sample_note
    from crag_cli.index import build_index
    from crag_cli.settings import Settings
    from crag_cli.train import in_sample
    from webstandin import start_in_thread

    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    qfile = args.questions or args.data / "questions.dev.jsonl"
    lines = [line for line in qfile.read_text().splitlines() if line.strip()]
    questions = [json.loads(line) for line in spread_sample(lines, args.sample)]
    try:
        seen = in_sample([q["question"] for q in questions], args.evaluator or Settings().evaluator)
    except CragError as exc:  # an evaluator whose manifest cannot be read: one line, before any work
        parser.error(str(exc))
    seen_note = ("crag's evaluator: " + in_sample_note(seen, len(questions))) if seen and any(seen.values()) else ""
    if seen_note:  # the accuracies are then not out of sample (the timings are unaffected)
        print("warning: " + seen_note, file=sys.stderr)
    docs = args.data / "docs"
    build_index(docs if docs.is_dir() else args.data / "corpus.jsonl", out / "index")
    _server, web_url = start_in_thread(args.data / "web.jsonl")
    common = (
        {"index": str(out / "index")}
        | ({"model": args.model} if args.model else {})
        | ({"task": args.task} if args.task else {})
    )
    web = {} if args.web_off else {"web": "searxng", "searxng_url": web_url, "allow_private": True, "cache": False}
    common |= {"evaluator": args.evaluator} if args.evaluator else {}  # plain RAG's too: --task auto asks its domain
    opened = {
        name: crag_cli.open(**common, **(web if m["mode"] == "crag" else {}), **m).load() for name, m in modes.items()
    }
    names = list(modes)
    records: dict[str, list[dict]] = {name: [] for name in names}
    per_group: dict[str, list[float]] = {name: [] for name in names}
    start = time.perf_counter()
    for g, first in enumerate(range(0, len(questions), GROUP_LINES)):
        group = questions[first : first + GROUP_LINES]
        for name in names if g % 2 == 0 else names[::-1]:
            recs = list(opened[name].answer(group))
            records[name] += recs
            per_group[name].append(sum(r["timings"]["total"] for r in recs))
        done = first + len(group)
        print(
            f"timing: {done}/{len(questions)} questions, "
            + ", ".join(f"{n} {sum(per_group[n]) / done:.2f} s/question" for n in names),
            file=sys.stderr,
        )
    wall = time.perf_counter() - start

    n = len(questions)
    result = {
        "questions": n,
        "model": opened["crag"].settings.model,
        "task": opened["crag"].settings.task,
        "group": GROUP_LINES,
        "crag_settings": crag_settings,
        "wall_seconds": round(wall, 1),
        "modes": {},
    }
    for name in names:
        recs = records[name]
        (out / f"records-{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs))
        stages = sorted({k for r in recs for k in r["timings"]})
        result["modes"][name] = {
            "seconds_per_question": round(sum(per_group[name]) / n, 3),
            "stages": {k: round(sum(r["timings"].get(k, 0.0) for r in recs) / n, 3) for k in stages},
            "prompt_tokens": round(sum(r.get("prompt_tokens") or 0 for r in recs) / n, 1),
            "correct": sum(bool(r.get("correct")) for r in recs),
            "errors": sum(bool(r.get("error")) for r in recs),
        }
    a, b = np.array(per_group["crag"]), np.array(per_group[rag])
    lo, hi = bootstrap_ratio(a, b)
    result["ratio"] = {
        "rag": rag,
        "crag_over_rag": round(float(a.sum() / b.sum()), 3),
        "ci95": [round(lo, 3), round(hi, 3)],
    }
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    rows = [
        "| mode | questions | correct | prompt tokens | s/question | "
        + " | ".join(f"{k} s" for k in SHOWN_STAGES)
        + " |",
        "|" + "---|" * (5 + len(SHOWN_STAGES)),
    ]
    for name in names:
        m = result["modes"][name]
        rows.append(
            f"| {name} | {n} | {m['correct']} | {m['prompt_tokens']} | {m['seconds_per_question']:.2f} | "
            + " | ".join(f"{m['stages'].get(k, 0.0):.2f}" for k in SHOWN_STAGES)
            + " |"
        )
    text = "\n".join(rows) + (
        f"\n\ncrag / {rag} = {result['ratio']['crag_over_rag']:.3f} "
        f"(95% interval over the {len(a)} groups: {lo:.3f} to {hi:.3f}); wall {wall:.0f} s\n"
    )
    text += f"\n**{seen_note}**\n" if seen_note else ""
    (out / "results.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
