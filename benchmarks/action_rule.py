"""How far can the action decision go with a given evaluator's scores?

    python benchmarks/action_rule.py --data ../shared/bench/popqa --index IX --evaluator minilm [--test 200] [--out OUT]

CRAG decides a question's action from its best passage score. This script asks
whether more of what the pipeline already knows helps: the question's best
evaluator logit together with the top BM25 score of its retrieval (a rare,
exactly matched name scores high). It takes the held-out questions of
``benchmarks/split_popqa.py`` (``--test``, the spread sample the PopQA benchmark
reports on) and the evaluator's own validation questions (the ones its manifest
lists: a trained evaluator's), and reports the action accuracy on the held-out
questions of

* ``best score``: the paper's rule with the thresholds the crag calibration
  picks on the validation questions (a trained evaluator's stored ones);
* ``best logit + BM25``: a logistic regression on the two, fitted on the
  validation questions only, its output thresholded the same way;
* ``best logit + top cosine``: the same with the best cosine of the base
  encoder's embeddings (``minilm-cosine``) instead of BM25, which does not
  depend on the collection's size and vocabulary as a raw BM25 score does;
* ``pair logit + cosine``: each pair's logit and cosine combined by a logistic
  regression fitted on the validation *pairs*, then the paper's rule on the best
  combined score (so the actions still come from one score per passage);
* for each, the ``ceiling``: the best any pair of thresholds could do on the
  held-out questions themselves (not a result: it shows what the rule can reach).

A question's retrieval holds the answer when a gold alias occurs as whole words
in one of its top-k passages (as ``crag evaluator-test`` counts). Ambiguous
counts half right. Prints a Markdown table; ``--out`` also writes it with the
per-question features as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from popqa import spread_sample  # noqa: E402  (the benchmark's own sample: one definition)

from crag_cli.action.trigger import resolve_thresholds  # noqa: E402
from crag_cli.action.calibrate import Item, action_accuracy, choose_action_thresholds  # noqa: E402
from crag_cli.assemble import evaluator_of  # noqa: E402
from crag_cli.action.evaltest import in_sample_note  # noqa: E402
from crag_cli.index import BM25Index  # noqa: E402
from crag_cli.action.match import holds_answer  # noqa: E402
from crag_cli.errors import CragError  # noqa: E402
from crag_cli.train import in_sample, question_fingerprint, seen_by  # noqa: E402
import data  # noqa: E402  (a path under benchmarks/DOMAIN/ is unpacked on demand)


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-2) -> np.ndarray:
    """Weights (bias last) of an L2-regularised logistic regression on standardised ``x`` (scipy's L-BFGS)."""
    from scipy.optimize import minimize

    xb = np.hstack([x, np.ones((len(x), 1))])

    def loss(w):
        z = xb @ w
        p = 1 / (1 + np.exp(-z))
        nll = np.sum(np.logaddexp(0, z) - y * z) / len(y) + l2 * np.sum(w[:-1] ** 2)
        grad = xb.T @ (p - y) / len(y)
        grad[:-1] += 2 * l2 * w[:-1]
        return nll, grad

    return minimize(loss, np.zeros(xb.shape[1]), jac=True, method="L-BFGS-B").x


def ceiling(items: list[Item]) -> float:
    """The best action accuracy any ``lower <= upper`` pair reaches on ``items`` (scored by their best)."""
    cuts = sorted({it.best for it in items}) + [math.inf]
    return max(action_accuracy(items, up, lo)[0] for i, up in enumerate(cuts) for lo in cuts[: i + 1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=data.on_demand, required=True, help="folder with questions.dev.jsonl")
    parser.add_argument("--index", type=Path, required=True, help="a crag index of the folder's corpus.jsonl")
    parser.add_argument(
        "--evaluator",
        required=True,
        help="a trained evaluator whose manifest lists its questions (crag train-evaluator keeps them since session 15; the embedded minilm lists them too), as --evaluator takes it",
    )
    parser.add_argument("--test", type=int, default=200, help="held-out questions (split_popqa.py --test)")
    parser.add_argument("-k", "--top-k", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    questions = [json.loads(x) for x in (args.data / "questions.dev.jsonl").read_text().splitlines() if x.strip()]
    held = set(spread_sample(list(range(len(questions))), args.test))
    test = [q for i, q in enumerate(questions) if i in held]
    try:
        seen_fps = seen_by(args.evaluator)
        seen = in_sample([q["question"] for q in test], args.evaluator)
    except CragError as exc:
        parser.error(str(exc))
    if seen_fps is None:
        parser.error(
            f"--evaluator {args.evaluator}: not a trained evaluator whose manifest lists its validation questions"
        )
    # the evaluator's own validation questions, as its manifest lists them (held-out ones are never among them),
    # each once: a question filed twice under two ids is one question
    val, taken = [], set()
    for i, q in enumerate(questions):
        fp = question_fingerprint(q["question"])
        if i not in held and seen_fps.get(fp) == "validation" and fp not in taken:
            taken.add(fp)
            val.append(q)
    seen_note = ("held-out part: " + in_sample_note(seen, len(test))) if seen and any(seen.values()) else ""
    if seen_note:  # said before the scoring: these questions are not held out from this evaluator
        print("warning: " + seen_note, file=sys.stderr)

    index = BM25Index.load(args.index)
    evaluator = evaluator_of(args.evaluator)
    cosine = evaluator_of("minilm-cosine")
    thresholds = resolve_thresholds(args.evaluator)
    rows = {}
    for name, part in (("validation", val), ("held-out", test)):
        feats = []
        for q in part:
            hits = index.search(q["question"], args.top_k)
            pairs = [(q["question"], h.passage.text) for h in hits]
            scores = evaluator.score(pairs)
            logits = evaluator.logits(pairs) if hasattr(evaluator, "logits") else scores
            pair_holds = [holds_answer(h.passage.text, q["answers"]) for h in hits]
            cosines = cosine.score(pairs) if pairs else []
            feats.append(
                {
                    "id": q["id"],
                    "holds": any(pair_holds),
                    "pair_holds": pair_holds,
                    "best_score": max(scores, default=-1.0),
                    "best_logit": max(logits, default=-10.0),
                    "bm25_top": hits[0].score if hits else 0.0,
                    "cosine_top": max(cosines, default=-1.0),
                    "logits": [float(z) for z in logits],
                    "cosines": [float(c) for c in cosines],
                }
            )
            print(f"{name}: {len(feats)}/{len(part)}", end="\r", file=sys.stderr)
        rows[name] = feats
    print(file=sys.stderr)

    def items(feats, key):
        return [Item([f[key]], f["holds"]) for f in feats]

    weights = {}

    def fit(key, x, y):
        """A logistic regression on standardised ``x``, kept under ``key``; returns its linear predictor."""
        mu, sd = x.mean(0), x.std(0) + 1e-9
        w = fit_logistic((x - mu) / sd, y)
        weights[key] = {"weights": w.tolist(), "mean": mu.tolist(), "sd": sd.tolist()}
        return lambda v: ((np.asarray(v) - mu) / sd) @ w[:-1] + w[-1]

    y = np.array([f["holds"] for f in rows["validation"]], dtype=float)
    for key, second in (
        ("combined", "bm25_top"),
        ("with_cosine", "cosine_top"),
    ):  # question-level: the best logit and one more
        predict = fit(key, np.array([[f["best_logit"], f[second]] for f in rows["validation"]]), y)
        for f in (f for n in rows for f in rows[n]):
            f[key] = float(predict([f["best_logit"], f[second]]))
    # pair-level: every pair's logit and cosine, fitted on the validation pairs; a question keeps its best pair
    predict = fit(
        "pair_cosine",
        np.array([[z, c] for f in rows["validation"] for z, c in zip(f["logits"], f["cosines"])]),
        np.array([h for f in rows["validation"] for h in f["pair_holds"]], dtype=float),
    )
    for f in (f for n in rows for f in rows[n]):
        f["pair_cosine"] = float(np.max(predict(np.array([f["logits"], f["cosines"]]).T))) if f["logits"] else -10.0

    table = [
        "| rule | thresholds from | upper | lower | held-out action accuracy | C/A/I | ceiling on held-out |",
        "|---|---|---|---|---|---|---|",
    ]
    results = {}
    for rule, key in (
        ("best score", "best_score"),
        ("best logit + BM25", "combined"),
        ("best logit + top cosine", "with_cosine"),
        ("pair logit + cosine", "pair_cosine"),
    ):
        if key == "best_score" and "calibrated" in thresholds.source:
            up, lo, src = thresholds.upper, thresholds.lower, "stored with the evaluator"
        else:
            up, lo, _ = choose_action_thresholds(items(rows["validation"], key))
            src = "crag's calibration on the validation questions"
        acc, counts = action_accuracy(items(rows["held-out"], key), up, lo)
        top = ceiling(items(rows["held-out"], key))
        cia = f"{counts['correct']}/{counts['ambiguous']}/{counts['incorrect']}"
        table.append(f"| {rule} | {src} | {up:.4f} | {lo:.4f} | {acc:.1%} | {cia} | {top:.1%} |")
        results[rule] = {"upper": up, "lower": lo, "action_accuracy": acc, "actions": counts, "ceiling": top}
    text = (
        f"{len(test)} held-out questions (retrieval holds the answer for "
        f"{np.mean([f['holds'] for f in rows['held-out']]):.1%}), {len(val)} validation questions, "
        f"evaluator {args.evaluator}, top-{args.top_k}\n\n" + "\n".join(table)
    )
    text += f"\n\n**{seen_note}**" if seen_note else ""
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "action_rule.md").write_text(text + "\n")
        (args.out / "action_rule.json").write_text(
            json.dumps({"results": results, "fits": weights, "questions": rows}, indent=1)
        )


if __name__ == "__main__":
    main()
