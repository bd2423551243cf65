"""A full fine-tune of all-MiniLM-L6-v2 as a cross-encoder (every weight, not a LoRA adapter): its logit's pair AUC.

    python benchmarks/cross_encoder_full.py --cache DIR --train squad=SQ/questions.jsonl@SQIX:1600 \\
        --train popqa=SPLIT/train.jsonl@POPIX --test covid=Q@IX:150 --test docs=Q@IX ... --out OUT

An experiment, not a crag command: does the cross-encoder learn relevance that carries to another folder when all
its weights are trained, where a LoRA adapter did not (docs/default-evaluator.md)? Each ``--train`` set is a seeded
sample (``NAME=QUESTIONS@INDEX[:N]``, seed 0) less the questions in ``DIR/NAME.jsonl`` (the fused fit's and the
tests' candidates, as ``benchmarks/evaluator_features.py`` caches them); each question's fused top 10 is labelled
(a gold answer in the passage, whole words) and gives its positives and its ``--negatives`` best-ranked negatives.
One pass of AdamW (learning rate 3e-5, warm-up 5%, then linear decay), batches of 16, 256 tokens, mean-pooled, one
logit; seeded. The model is written to ``OUT/model.pt``. Each ``--test`` set's pairs (the fused top 10 of its
questions with gold answers, from the cache) are scored by it and by the shipped cross-encoder. About 10 pairs a
second on 2 cores: 10,580 pairs in 18 minutes.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import torch

from crag_cli.action.evaltest import auc
from crag_cli.action.match import holds_answer
from crag_cli.evaluator import build_evaluator
from crag_cli.evaluator.base import default_minilm_path
from crag_cli.index import BM25Index, Retrieval
from crag_cli.train.fused import sample, cached

from evaluator_features import spec


def training_pairs(text: str, cache: Path, negatives: int) -> list[tuple[str, str, float]]:
    """A ``--train`` set's labelled pairs: each question's positives and its best-ranked ``negatives``."""
    name, qfile, index, part = spec(text)
    path = cache / f"{name}.jsonl"
    taken = {r["id"] for r in map(json.loads, open(path))} if path.exists() else set()
    questions = [q for q in sample(qfile, None, 0, set()) if q["id"] not in taken][part]
    retrieval, pairs = Retrieval(BM25Index.load(index), "fused"), []
    for q in questions:
        hits = retrieval.search(q["question"], 10)
        labels = [holds_answer(h.passage.text, q["answers"]) for h in hits]
        pairs += [(q["question"], h.passage.text, 1.0) for h, y in zip(hits, labels) if y]
        pairs += [(q["question"], h.passage.text, 0.0) for h, y in zip(hits, labels) if not y][:negatives]
    print(f"{name}: {len(questions)} questions, {len(pairs)} pairs", file=sys.stderr)
    return pairs


class CrossEncoder(torch.nn.Module):
    """all-MiniLM-L6-v2, mean-pooled over the pair's tokens, and one logit."""

    def __init__(self) -> None:
        from transformers import AutoModel, AutoTokenizer

        super().__init__()
        path = default_minilm_path()
        self.tokenizer, self.encoder = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path)
        self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1)

    def forward(self, pairs: list[tuple[str, str]]) -> torch.Tensor:
        x = self.tokenizer(
            [q for q, _ in pairs], [p for _, p in pairs], truncation="only_second", max_length=256, padding=True,
            return_tensors="pt",
        )  # fmt: skip
        mask = x["attention_mask"].unsqueeze(-1).float()
        return self.head((self.encoder(**x).last_hidden_state * mask).sum(1) / mask.sum(1)).squeeze(-1)


def train(model: CrossEncoder, pairs: list, batch: int = 16, lr: float = 3e-5) -> None:
    """One seeded pass of AdamW over ``pairs`` (shuffled), warm-up then linear decay."""
    torch.set_grad_enabled(True)
    params = list(model.parameters())
    for p in params:
        p.requires_grad_(True)
    steps = (len(pairs) + batch - 1) // batch
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    warm = max(1.0, steps * 0.05)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 1 - s / steps))
    model.train()
    t0 = time.time()
    for s in range(steps):
        b = pairs[s * batch : (s + 1) * batch]
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            model([(q, p) for q, p, _ in b]), torch.tensor([y for _, _, y in b])
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if s % 50 == 0:
            print(f"step {s} of {steps}: {(s + 1) * batch / (time.time() - t0):.1f} pairs/s", file=sys.stderr)
    model.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", action="append", required=True, help="NAME=QUESTIONS@INDEX[:N]")
    parser.add_argument("--test", action="append", required=True, help="NAME=QUESTIONS@INDEX[:N]")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--negatives", type=int, default=4)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    random.seed(0)
    pairs = [p for text in args.train for p in training_pairs(text, args.cache, args.negatives)]
    random.shuffle(pairs)
    model = CrossEncoder()
    args.out.mkdir(parents=True, exist_ok=True)
    if (args.out / "model.pt").exists():  # trained before: score it again
        model.load_state_dict(torch.load(args.out / "model.pt"))
        model.eval()
    else:
        train(model, pairs)
        torch.save(model.state_dict(), args.out / "model.pt")
    shipped = build_evaluator("minilm", batch_size=10, max_length=512, evaluator_precision="float")
    print("| set | pairs | full fine-tune | shipped |\n|---|---|---|---|")
    for text in args.test:
        name, qfile, index, part = spec(text)
        records = cached(name, qfile, index, shipped, args.cache, part.stop, 0, unanswered=True)[part]
        retrieval, z, y, base = Retrieval(BM25Index.load(index), "fused"), [], [], []
        gold = {q["id"] for q in map(json.loads, open(qfile, encoding="utf-8")) if q.get("answers")}
        with torch.no_grad():
            for r in (r for r in records if r["id"] in gold):
                hits = retrieval.search(r["question"], 10)
                z += model([(r["question"], h.passage.text) for h in hits]).tolist()
                y, base = y + r["labels"], base + [c["logit"] for c in r["cands"]]
        print(f"| {name} | {len(y)} | {auc(z, y):.3f} | {auc(base, y):.3f} |", flush=True)


if __name__ == "__main__":
    main()
