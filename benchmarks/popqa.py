"""Benchmark of a bench folder (PopQA, COVID-QA, any): does correction beat plain RAG, and at what cost?

    python benchmarks/popqa.py --data DIR [--questions FILE] [--limit N] [--sample N] [--modes rag,crag,...]
                               [--model NAME] [--evaluator SPEC] [--task TASK] --out OUTDIR

DIR is laid out as ``../shared/bench/popqa`` or ``../shared/bench/covidqa``: a
``docs/`` folder (indexed as a user would, ``crag index DIR/docs``: any file
type ``crag index`` reads) or a ``corpus.jsonl``, a ``web.jsonl`` served as the
web, and ``questions.dev.jsonl`` (``id``, ``question``, ``answers``; optional
``answer_in_local`` / ``answer_in_web``). The script builds the index (``OUTDIR/index``),
starts the web stand-in (``benchmarks/webstandin.py``) on ``web.jsonl``, and runs
every mode as a real ``crag batch`` process on the same questions, index,
reader and web (no web cache, so every mode pays for its searches):

======================  =====================================================
``no-retrieval``        the reader alone
``rag``                 the top-k passages straight to the reader (k = 10)
``rag-k3``, ``rag-k5``  the same with k = 3 and k = 5 (``rag-k5``: BM25's, whatever the index has)
``rag-k5-fused``        plain RAG k = 5 over BM25 and the dense part (reciprocal rank fusion)
``rag+web``             the top-k passages plus web knowledge, always
``crag``                CRAG (evaluate, act, refine, search when needed)
``crag-web-off``        CRAG as installed: no web (crag's default)
``crag-refine``         CRAG that cuts the kept passages into strips too (``--refine``)
``crag-evidence``       CRAG that judges Correct out of the evaluator's domain by combined evidence (``--evidence``)
``crag-no-rewrite``     CRAG that searches with the question itself
``crag-model-rewrite``  CRAG whose search query the reader writes (``--rewrite model``)
======================  =====================================================

It writes ``OUTDIR/records-<mode>.jsonl`` (the batch records: an existing file
that starts with records for all the questions is reused, so a report can be
redrawn without rerunning; one that stops part-way, say because the run was
interrupted, is resumed with ``crag batch --resume``; any other is replaced with ``--overwrite``),
``OUTDIR/results.json``, ``OUTDIR/results.md`` and ``OUTDIR/results.png``.

Metrics per mode: accuracy, or "span found" (a gold alias or span occurs in the
answer as whole words, ignoring case; the substring figure of the paper beside
it), SQuAD token F1 and token recall of the answer against the gold (mean over
questions; for long answer spans, where "found" is too strict), reader efficiency
(among questions whose knowledge given to the reader holds a gold answer, the
share answered; overall and per relation), the share of grounded answers, count
per action, action accuracy (Correct right when the retrieved local passages
hold a gold answer, Incorrect right when they do not, Ambiguous half right),
mean prompt tokens, seconds per question, and mean seconds per stage (retrieve,
evaluate, refine, search = rewrite + search + fetch, generate). Diagnostics: the
share of questions whose knowledge holds a gold answer (an upper bound for a
perfect reader), and, among questions that used the web, the share whose kept
web strips hold one. ``--sample N`` takes N questions spread over the file
(every len/N-th: the question files are sorted by relation). ``--questions FILE``
asks the questions of FILE (a fold written by ``benchmarks/split_popqa.py --folds``)
instead of ``DIR/questions.dev.jsonl``; ``--evaluator SPEC`` is the evaluator of
the modes that evaluate (crag's default otherwise), for cross-fitting: each fold
answered with the evaluator trained on the other folds, the folds' runs then
joined by ``benchmarks/crossfit.py``. ``--task TASK`` is every mode's
generation task (``crag batch --task``; crag's default otherwise), for
instance ``docqa`` for a folder of documents whose answers are the
references' sentences.
Questions with no gold answer (``answers`` empty: the folder cannot answer them, as in
``benchmarks/docsqa/``) are left out of every metric above and counted apart: the share of answerable and of
unanswerable questions answered "Not found" (the record's ``basis`` is ``none``), per mode.
``--prompt-cache FILE`` answers a prompt already answered (same messages, model and token budget, in this or an
earlier run) from FILE instead of the reader (``benchmarks/prompt_cache.py``; the reader is greedy, so the
answer is the same): for accuracy runs that share prompts across modes; their seconds are then not timings.
Below the main table: span found, F1, token recall and knowledge recall (the
knowledge given to the reader still holds the gold span) per action and for
local against web-only questions, and the slowest questions with their stages.
Every mode other than plain RAG is paired with each plain-RAG mode run beside
it (``rag``, ``rag-k3``, ``rag-k5``) on the same questions (``vs``: accuracy
difference, 95% interval, exact McNemar p). The web-only questions
(``answer_in_web`` and not ``answer_in_local`` in the question file) get their
own line: how many were sent to the web and how many were answered.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

MODES = {
    "no-retrieval": ["--mode", "no-retrieval"],
    "rag": ["--mode", "rag"],
    "rag-k3": ["--mode", "rag", "--top-k", "3"],
    "rag-k5": ["--mode", "rag", "--top-k", "5", "--retrieval", "bm25"],  # plain RAG over BM25, as before the dense part
    "rag-k5-fused": ["--mode", "rag", "--top-k", "5", "--retrieval", "fused"],  # over BM25 and the dense part (RRF)
    "rag-k10": ["--mode", "rag", "--top-k", "10"],  # = rag (k = 10, crag's default), named for tables that show all k
    "rag+web": ["--mode", "rag+web", "WEB"],
    "crag": ["--mode", "crag", "WEB"],
    "crag-web-off": ["--mode", "crag"],  # crag's default configuration: no web
    "crag-refine": ["--mode", "crag", "--refine", "WEB"],
    "crag-evidence": ["--mode", "crag", "--evidence", "WEB"],
    "crag-no-rewrite": ["--mode", "crag", "--rewrite", "none", "WEB"],
    "crag-model-rewrite": ["--mode", "crag", "--rewrite", "model", "WEB"],
}
STAGES = ("retrieve", "evaluate", "refine", "search", "generate")
# the modes whose --evaluator matters
EVALUATES = {"crag", "crag-web-off", "crag-refine", "crag-evidence", "crag-no-rewrite", "crag-model-rewrite"}


from crag_cli.evaluator import EvaluatorError, absolute_spec  # noqa: E402
from crag_cli.reader.models import DEFAULT_MODEL  # noqa: E402
from crag_cli.pipeline.modes import Mode  # noqa: E402
from crag_cli.reader.prompts import TASK_CHOICES  # noqa: E402
from crag_cli.settings import Settings  # noqa: E402
from crag_cli.action.match import holds_answer, token_scores  # noqa: E402  (the one definition of "holds a gold answer")
from crag_cli.action.evaltest import in_sample_note  # noqa: E402
from crag_cli.train import in_sample as evaluator_in_sample  # noqa: E402
import data  # noqa: E402  (a path under benchmarks/DOMAIN/ is unpacked on demand)


def previous_web_port(out: Path) -> int:
    """The stand-in's port of an earlier run into ``out`` (0 when none): an interrupted crag batch resumes only
    with the same ``--searxng-url``."""
    for manifest in sorted(out.glob("records-*.jsonl.run.json")):
        try:
            url = json.loads(manifest.read_text()).get("identity", {}).get("searxng_url") or ""
        except (OSError, ValueError):
            continue
        port = url.rpartition(":")[2]
        if url.startswith("http://127.0.0.1:") and port.isdigit():
            return int(port)
    return 0


def start_web(web: Path, out: Path):
    """Start the web stand-in, on the port of an earlier run into ``out`` when it is free (else any free port)."""
    from webstandin import start_in_thread

    port = previous_web_port(out)
    try:
        return start_in_thread(web, port)
    except OSError:
        return start_in_thread(web, 0)


def spread_sample(lines: list[str], n: int | None) -> list[str]:
    """Every (len/n)-th line, so a sample of a file sorted by relation covers every relation.

    ``None`` (or ``n >= len(lines)``) keeps all lines.
    """
    if n is None or n >= len(lines):
        return list(lines)
    return [lines[i * len(lines) // n] for i in range(n)]


def score_records(records: list[dict], questions: dict[str, dict]) -> list[dict]:
    """Set each record's ``correct_word`` (a gold answer in it, whole words) and ``f1`` (SQuAD token F1)."""
    for r in records:
        gold = questions[r["id"]]["answers"]
        r["correct_word"] = holds_answer(r.get("answer") or "", gold)
        r["f1"] = token_scores(r.get("answer") or "", gold)[0]
    return records


def summarise(records: list[dict], passages: dict[str, str], questions: dict[str, dict]) -> dict:
    """The metrics of one mode from its batch records."""
    n = len(records)
    actions: dict[str, int] = {}
    right = 0.0
    stage = {s: 0.0 for s in STAGES}
    prompt_tokens = [r["prompt_tokens"] for r in records if r.get("prompt_tokens") is not None]
    readings: dict[str, int] = {}  # what crag's reading rule read (the record's ``reading``), how often
    for r in records:
        if r.get("reading"):
            readings[r["reading"]] = readings.get(r["reading"], 0) + 1
    knowledge_holds = web_used = web_holds = 0
    right_word = right_substring = 0
    relations: dict[str, list[int]] = {}  # relation -> [knowledge holds, of those answered]
    grounded = [r["grounded"] for r in records if r.get("grounded") is not None]
    web_only = [0, 0, 0]  # answer in the web, not in the local passages: questions, sent to the web, answered
    groups: dict[str, dict[str, dict]] = {"action": {}, "place": {}}  # per action / local or web-only: sums
    f1_sum = recall_sum = 0.0
    for r in records:
        gold = questions[r["id"]]["answers"]
        answer = r.get("answer") or ""
        answered = holds_answer(answer, gold)
        f1, recall = token_scores(answer, gold)
        f1_sum += f1
        recall_sum += recall
        right_word += answered
        right_substring += holds_answer(answer, gold, whole_word=False)
        ext = r.get("external_knowledge") or {}
        web_texts = [s["text"] for s in ext.get("strips") or []]
        if r.get("mode") in ("rag", "rag+web"):
            texts = [passages.get(s["id"], "") for s in r.get("scores") or []]
        else:
            texts = [s["text"] for s in r.get("internal_knowledge") or []]
        knowledge_hold = any(holds_answer(t, gold) for t in texts + web_texts)
        knowledge_holds += knowledge_hold
        if knowledge_hold:
            rel = relations.setdefault(questions[r["id"]].get("prop", "?"), [0, 0])
            rel[0] += 1
            rel[1] += answered
        went_to_web = bool(ext) and ext.get("backend") != "none"
        if went_to_web:
            web_used += 1
            web_holds += any(holds_answer(t, gold) for t in web_texts)
        q = questions[r["id"]]
        if q.get("answer_in_web") and not q.get("answer_in_local"):
            web_only[0] += 1
            web_only[1] += went_to_web
            web_only[2] += answered
        place = "local" if q.get("answer_in_local") else ("web-only" if q.get("answer_in_web") else None)
        for kind, key in (("action", r.get("action") or ("error" if r.get("error") else None)), ("place", place)):
            if key:
                g = groups[kind].setdefault(key, {"n": 0, "span": 0, "f1": 0.0, "recall": 0.0, "knowledge": 0})
                g["n"] += 1
                g["span"] += answered
                g["f1"] += f1
                g["recall"] += recall
                g["knowledge"] += knowledge_hold
        action = r.get("action")
        if action:
            actions[action] = actions.get(action, 0) + 1
            gold = questions[r["id"]]["answers"]
            local = any(holds_answer(passages.get(s["id"], ""), gold) for s in r.get("scores") or [])
            right += 0.5 if action == "ambiguous" else float((action == "correct") == local)
        t = r.get("timings") or {}
        for s in STAGES:
            stage[s] += t.get(s, 0.0) + (t.get("rewrite", 0.0) if s == "search" else 0.0)
    return {
        "n": n,
        "accuracy": round(right_word / n, 4) if n else None,
        "accuracy_substring": round(right_substring / n, 4) if n else None,
        "reader_efficiency": round(sum(v[1] for v in relations.values()) / knowledge_holds, 4)
        if knowledge_holds
        else None,
        "reader_efficiency_by_relation": {k: [v[1], v[0]] for k, v in sorted(relations.items())},
        "grounded": round(sum(grounded) / len(grounded), 4) if grounded else None,
        "actions": actions,
        "action_accuracy": round(right / n, 4) if actions else None,
        "prompt_tokens": round(sum(prompt_tokens) / len(prompt_tokens), 1) if prompt_tokens else None,
        "readings": readings or None,
        "seconds_per_question": round(sum((r.get("timings") or {}).get("total", 0.0) for r in records) / n, 3),
        "stage_seconds": {s: round(v / n, 3) for s, v in stage.items()},
        "knowledge_holds_answer": round(knowledge_holds / n, 4) if n else None,
        "web_used": web_used,
        "web_strips_hold_answer": round(web_holds / web_used, 4) if web_used else None,
        "web_only": {"n": web_only[0], "to_web": web_only[1], "answered": web_only[2]},
        "errors": sum(bool(r.get("error")) for r in records),
        "f1": round(f1_sum / n, 4) if n else None,
        "token_recall": round(recall_sum / n, 4) if n else None,
        "by_action": _means(groups["action"]),
        "by_place": _means(groups["place"]),
        "max_seconds": round(max(((r.get("timings") or {}).get("total", 0.0) for r in records), default=0.0), 2),
        "slowest": [
            {"id": r["id"], "action": r.get("action"), **{k: round(v, 2) for k, v in (r.get("timings") or {}).items()}}
            for r in sorted(records, key=lambda r: -(r.get("timings") or {}).get("total", 0.0))[:5]
        ],
    }


def not_found_shares(records: list[dict], questions: dict[str, dict]) -> dict:
    """How many answerable and unanswerable questions were answered "Not found" (``basis`` ``none``).

    Unanswerable: no gold answer in the question file (the folder cannot answer it); those whose ``answer_in_web``
    is true (the stand-in web can) are counted apart as ``web_answerable``.
    """
    groups: dict[str, list[dict]] = {"answerable": [], "unanswerable": [], "web_answerable": []}
    for r in records:
        q = questions[r["id"]]
        kind = "answerable" if q["answers"] else ("web_answerable" if q.get("answer_in_web") else "unanswerable")
        groups[kind].append(r)
    out = {}
    for kind, rs in groups.items():
        found_none = sum(r.get("basis") == "none" for r in rs)
        out[kind] = {"n": len(rs), "not_found": found_none, "share": round(found_none / len(rs), 4) if rs else None}
    return out


def not_found_table(results: dict) -> str:
    """Per mode, the questions answered "Not found": answerable, unanswerable, answerable by the web alone."""
    rows = [(mode, m["not_found"]) for mode, m in results.items() if m.get("not_found")]
    if not rows:
        return ""
    lines = [
        "",
        "| mode | answerable: Not found | unanswerable: Not found | only the web answers: Not found |",
        "|---|---|---|---|",
    ]
    for mode, nf in rows:
        cells = [f"{nf[k]['not_found']} / {nf[k]['n']}" for k in ("answerable", "unanswerable", "web_answerable")]
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _means(groups: dict[str, dict]) -> dict[str, dict]:
    """Per group: ``n`` and the shares (span found, knowledge holds it) and means (F1, token recall)."""
    return {
        k: {
            "n": g["n"],
            "span": round(g["span"] / g["n"], 4),
            "f1": round(g["f1"] / g["n"], 4),
            "recall": round(g["recall"] / g["n"], 4),
            "knowledge": round(g["knowledge"] / g["n"], 4),
        }
        for k, g in sorted(groups.items())
    }


def paired(records: list[dict], baseline: list[dict]) -> dict:
    """Accuracy of one mode against a baseline's on the same questions.

    Parameters
    ----------
    records, baseline : list of dict
        Batch records of the two modes, each with ``correct_word`` (the
        benchmark's metric) set; questions are matched by ``id``.

    Returns
    -------
    dict
        ``n`` paired questions, ``difference`` in accuracy (mode minus baseline),
        ``ci95`` (normal approximation for the mean of paired differences),
        ``only_mode`` / ``only_baseline`` (questions only one of them got right)
        and ``p_value`` of the exact two-sided McNemar test on those two counts.
    """
    base = {r["id"]: bool(r.get("correct_word")) for r in baseline}
    diffs = [int(bool(r.get("correct_word"))) - int(base[r["id"]]) for r in records if r["id"] in base]
    n = len(diffs)
    if not n:
        return {"n": 0}
    only_mode, only_base = diffs.count(1), diffs.count(-1)
    mean = sum(diffs) / n
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1) if n > 1 else 0.0
    half = 1.96 * math.sqrt(var / n)
    k, m = min(only_mode, only_base), only_mode + only_base
    p = min(1.0, 2 * sum(math.comb(m, i) for i in range(k + 1)) / 2**m) if m else 1.0
    return {
        "n": n,
        "difference": round(mean, 4),
        "ci95": [round(mean - half, 4), round(mean + half, 4)],
        "only_mode": only_mode,
        "only_baseline": only_base,
        "p_value": float(f"{p:.3g}"),
    }


def paired_f1(records: list[dict], baseline: list[dict]) -> dict:
    """Mean token F1 of one mode minus a baseline's on the same questions (records carry ``f1``).

    Returns ``n``, ``difference`` and ``ci95`` (normal approximation for the mean
    of the paired differences), as :func:`paired` does for accuracy.
    """
    base = {r["id"]: r.get("f1", 0.0) for r in baseline}
    diffs = [r.get("f1", 0.0) - base[r["id"]] for r in records if r["id"] in base]
    n = len(diffs)
    if not n:
        return {"n": 0}
    mean = sum(diffs) / n
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1) if n > 1 else 0.0
    half = 1.96 * math.sqrt(var / n)
    return {"n": n, "difference": round(mean, 4), "ci95": [round(mean - half, 4), round(mean + half, 4)]}


def paired_table(results: dict) -> str:
    """Markdown lines for the modes paired with a plain-RAG baseline (empty when none is)."""
    rows = [
        (mode, base, v)
        for mode, m in results.items()
        for base, v in (m.get("vs") or ({"rag": m["vs_rag"]} if "vs_rag" in m else {})).items()
        if v.get("n")
    ]
    if not rows:
        return ""
    lines = [
        "",
        "Paired with plain RAG on the same questions:",
        "",
        "| mode | baseline | n | accuracy − baseline | 95% CI | right only here | right only with baseline | McNemar p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode, base, v in rows:
        lines.append(
            f"| {mode} | {base} | {v['n']} | {v['difference'] * 100:+.1f} pts | {v['ci95'][0] * 100:+.1f} to "
            f"{v['ci95'][1] * 100:+.1f} | {v['only_mode']} | {v['only_baseline']} | {v['p_value']:.3g} |"
        )
    f1_rows = [
        (mode, base, v) for mode, m in results.items() for base, v in (m.get("vs_f1") or {}).items() if v.get("n")
    ]
    if f1_rows:
        lines += ["", "| mode | baseline | n | token F1 − baseline | 95% CI |", "|---|---|---|---|---|"]
        lines += [
            f"| {mode} | {base} | {v['n']} | {v['difference'] * 100:+.1f} pts | {v['ci95'][0] * 100:+.1f} to "
            f"{v['ci95'][1] * 100:+.1f} |"
            for mode, base, v in f1_rows
        ]
    return "\n".join(lines) + "\n"


def web_only_table(results: dict) -> str:
    """The questions only the web can answer (gold answer in the web, not in the local passages)."""
    rows = [(mode, m["web_only"]) for mode, m in results.items() if (m.get("web_only") or {}).get("n")]
    if not rows:
        return ""
    lines = [
        "",
        "Web-only questions (`answer_in_web` and not `answer_in_local`):",
        "",
        "| mode | n | sent to the web | answered |",
        "|---|---|---|---|",
    ]
    for mode, w in rows:
        lines.append(
            f"| {mode} | {w['n']} | {w['to_web']} ({w['to_web'] / w['n']:.0%}) | "
            f"{w['answered']} ({w['answered'] / w['n']:.0%}) |"
        )
    return "\n".join(lines) + "\n"


def table(results: dict) -> str:
    head = (
        "| mode | n | accuracy | (substring) | reader efficiency | actions (C/A/I) | action acc. | "
        "knowledge holds answer | prompt tokens | s/question | " + " | ".join(f"{s} s" for s in STAGES) + " |"
    )
    lines = [head, "|" + "---|" * (10 + len(STAGES))]
    for mode, m in results.items():
        a = m["actions"]
        acts = f"{a.get('correct', 0)}/{a.get('ambiguous', 0)}/{a.get('incorrect', 0)}" if a else "–"
        aa = f"{m['action_accuracy']:.1%}" if m["action_accuracy"] is not None else "–"
        lines.append(
            f"| {mode} | {m['n']} | {m['accuracy']:.1%} | {m['accuracy_substring']:.1%} | "
            f"{m['reader_efficiency'] or 0:.1%} | {acts} | {aa} | {m['knowledge_holds_answer']:.1%} | "
            f"{m['prompt_tokens']} | "
            f"{m['seconds_per_question']:.2f} | " + " | ".join(f"{m['stage_seconds'][s]:.2f}" for s in STAGES) + " |"
        )
    return (
        "\n".join(lines)
        + "\n"
        + in_sample_lines(results)
        + not_found_table(results)
        + paired_table(results)
        + web_only_table(results)
        + group_tables(results)
        + slowest_table(results)
        + relation_table(results)
    )


def group_tables(results: dict) -> str:
    """Span found, token F1 and recall, and knowledge recall: overall, per action, local against web-only."""
    if not any("f1" in m for m in results.values()):
        return ""
    lines = [
        "",
        "Answers and knowledge (span found and knowledge recall: whole words; F1 and recall: SQuAD tokens):",
        "",
        "| mode | questions | n | span found | token F1 | token recall | knowledge holds span | max s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode, m in results.items():
        if "f1" not in m:
            continue
        lines.append(
            f"| {mode} | all | {m['n']} | {m['accuracy']:.1%} | {m['f1'] * 100:.1f} | "
            f"{m['token_recall'] * 100:.1f} | {m['knowledge_holds_answer']:.1%} | {m['max_seconds']:.1f} |"
        )
        for kind in ("by_place", "by_action"):
            for key, g in (m.get(kind) or {}).items():
                lines.append(
                    f"| {mode} | {key} | {g['n']} | {g['span']:.1%} | {g['f1'] * 100:.1f} | "
                    f"{g['recall'] * 100:.1f} | {g['knowledge']:.1%} | |"
                )
    return "\n".join(lines) + "\n"


def slowest_table(results: dict) -> str:
    """Each mode's five slowest questions with their stages' seconds."""
    rows = [(mode, r) for mode, m in results.items() for r in m.get("slowest") or []]
    if not rows:
        return ""
    lines = [
        "",
        "Slowest questions:",
        "",
        "| mode | id | action | total s | " + " | ".join(STAGES) + " | rewrite |",
        "|---|---|---|---|" + "---|" * (len(STAGES) + 1),
    ]
    for mode, r in rows:
        lines.append(
            f"| {mode} | {r['id']} | {r.get('action') or '–'} | {r.get('total', 0):.1f} | "
            + " | ".join(f"{r.get(s, 0):.1f}" for s in STAGES)
            + f" | {r.get('rewrite', 0):.1f} |"
        )
    return "\n".join(lines) + "\n"


def in_sample_lines(results: dict) -> str:
    """A warning under the table for each mode whose evaluator has seen some of the questions."""
    lines = [
        f"- **{mode}**: " + in_sample_note(m["in_sample"], m["n"])
        for mode, m in results.items()
        if any((m.get("in_sample") or {}).values())
    ]
    return "\n" + "\n".join(lines) + "\n" if lines else ""


def relation_table(results: dict) -> str:
    """Reader efficiency per relation: answered / questions whose knowledge holds a gold answer."""
    rels = sorted({r for m in results.values() for r in m.get("reader_efficiency_by_relation", {})})
    if not rels:
        return ""
    lines = [
        "",
        "Reader efficiency by relation (answered / knowledge holds a gold answer):",
        "",
        "| mode | " + " | ".join(rels) + " |",
        "|---|" + "---|" * len(rels),
    ]
    for mode, m in results.items():
        by = m.get("reader_efficiency_by_relation", {})
        lines.append(f"| {mode} | " + " | ".join(f"{by[r][0]}/{by[r][1]}" if r in by else "–" for r in rels) + " |")
    return "\n".join(lines) + "\n"


def chart(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = list(results)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    acc = [results[m]["accuracy"] * 100 for m in modes]
    bars = ax1.bar(modes, acc, color="#4c72b0")
    ax1.bar_label(bars, fmt="%.1f")
    ax1.set_ylabel("accuracy (%)")
    ax1.set_title("span found per mode (n = " + ", ".join(sorted({str(results[m]["n"]) for m in modes})) + ")")
    bottom = [0.0] * len(modes)
    for s in STAGES:
        vals = [results[m]["stage_seconds"][s] for m in modes]
        ax2.bar(modes, vals, bottom=bottom, label=s)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax2.set_ylabel("seconds per question")
    ax2.set_title("time per stage")
    ax2.legend()
    for ax in (ax1, ax2):
        ax.tick_params(axis="x", rotation=25)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def made_with(records: list[dict], evaluator: str | None, task: str | None = None) -> bool:
    """Whether every record was made with ``evaluator`` (``None``: a mode that does not evaluate, always true)
    and for ``task`` (``None``: any task)."""
    return all(
        (evaluator is None or r.get("evaluator") == evaluator) and (task is None or r.get("task") == task)
        for r in records
    )


def run_mode(
    mode: str,
    questions_file: Path,
    index: Path,
    web_url: str,
    model: str,
    out: Path,
    ids: list[str],
    evaluator: str | None = None,
    task: str | None = None,
    prompt_cache: Path | None = None,
) -> list[dict]:
    """Run one mode as ``crag batch``, reusing or resuming the records already in OUTDIR.

    ``evaluator`` (an absolute spec; ``None``: crag's default) is given to the
    modes that evaluate; their records are reused only when made with it.
    ``task`` (``None``: crag's default) is every mode's; records are reused
    only when made for it.
    """
    n = len(ids)
    wanted_task = task or Settings().task
    wanted = (evaluator or Settings().evaluator) if Mode(MODES[mode][1]).uses_evaluator(wanted_task) else None
    records_path = out / f"records-{mode}.jsonl"
    partial = records_path.with_name(records_path.name + ".partial")  # an interrupted crag batch's records
    existing = []
    source = records_path if records_path.exists() else partial
    if source.exists():
        for line in source.read_text().splitlines():
            try:
                existing.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut off by an interruption ends what is usable
                break
        if not made_with(existing[:n], wanted, wanted_task):
            print(
                f"{mode}: {source.name} was made with another evaluator or task than {wanted or 'none'}, "
                f"{wanted_task}: answering again",
                file=sys.stderr,
            )
            existing = []
        if source == records_path and len(existing) >= n and [r.get("id") for r in existing[:n]] == ids:
            print(f"{mode}: reusing the first {n} records of {records_path}", file=sys.stderr)
            return existing[:n]
    has_manifest = records_path.with_name(records_path.name + ".run.json").exists()
    resume = has_manifest and bool(existing) and [r.get("id") for r in existing] == ids[: len(existing)]
    args = [
        a
        for part in MODES[mode]
        for a in (
            ["--web", "searxng", "--searxng-url", web_url, "--allow-private", "--no-cache"] if part == "WEB" else [part]
        )
    ]
    if evaluator and Mode(MODES[mode][1]).uses_evaluator(wanted_task):
        args += ["--evaluator", evaluator]
    if task:
        args += ["--task", task]
    launcher = ["-m", "crag_cli"] if prompt_cache is None else [str(Path(__file__).with_name("prompt_cache.py"))]
    cmd = [
        sys.executable,
        *launcher,
        "batch",
        str(questions_file),
        "-o",
        str(records_path),
        "--index",
        str(index),
        "--model",
        model,
        *args,
        "--resume" if resume else "--overwrite",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAG_") or k == "CRAG_CACHE_DIR"}
    if prompt_cache is not None:
        env["PROMPT_CACHE"] = str(prompt_cache.resolve())
    print(f"{mode}: {' '.join(cmd)}", file=sys.stderr)
    start = time.perf_counter()
    with open(out / f"log-{mode}.txt", "a" if resume else "w") as log:
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=out)
    print(f"{mode}: exit {proc.returncode} after {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return [json.loads(line) for line in records_path.read_text().splitlines() if line.strip()]


def parse_modes(parser: argparse.ArgumentParser, text: str) -> list[str]:
    """The modes of a comma-separated ``--modes``; an unknown one is the parser's error."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown modes {unknown}; choose from {', '.join(MODES)}")
    return modes


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark of crag's modes on a bench folder (PopQA, COVID-QA, ...).")
    parser.add_argument(
        "--data",
        type=data.on_demand,
        required=True,
        help="folder with docs/ or corpus.jsonl, web.jsonl, questions.dev.jsonl",
    )
    parser.add_argument(
        "--questions",
        type=data.on_demand,
        default=None,
        help="questions to ask (default: DIR/questions.dev.jsonl), before --limit and --sample",
    )
    parser.add_argument("--limit", type=int, default=None, help="first N questions")
    parser.add_argument(
        "--sample", type=int, default=None, help="N questions spread over the file (every len/N-th), after --limit"
    )
    parser.add_argument("--modes", default="no-retrieval,rag,rag+web,crag,crag-refine,crag-no-rewrite")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="reader (default: crag's default)")
    parser.add_argument(
        "--evaluator",
        default=None,
        help="evaluator of the crag modes, and with --task auto every retrieving mode's domain (default: crag's default)",
    )
    parser.add_argument(
        "--task", choices=TASK_CHOICES, default=None, help="every mode's task (default: crag's default)"
    )
    parser.add_argument("--prompt-cache", type=Path, default=None, help="answers of prompts seen before (JSONL)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    from crag_cli.index import BM25Index, build_index

    modes = parse_modes(parser, args.modes)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    evaluator = None
    if args.evaluator:
        try:
            evaluator = absolute_spec(args.evaluator)  # crag batch runs in OUTDIR
        except EvaluatorError as exc:
            parser.error(str(exc))
    source = args.questions or args.data / "questions.dev.jsonl"
    lines = [line for line in source.read_text().splitlines() if line.strip()]
    lines = spread_sample(lines[: args.limit] if args.limit else lines, args.sample)
    questions_file = out / "questions.jsonl"
    questions_file.write_text("\n".join(lines) + "\n")
    questions = {json.loads(line)["id"]: json.loads(line) for line in lines}

    in_sample = None
    if EVALUATES & set(modes):  # said before anything runs: numbers on seen questions are not out of sample
        try:
            in_sample = evaluator_in_sample(
                [q["question"] for q in questions.values()], evaluator or Settings().evaluator
            )
        except EvaluatorError as exc:
            parser.error(str(exc))
        if in_sample and any(in_sample.values()):
            print("warning: crag's evaluator: " + in_sample_note(in_sample, len(questions)), file=sys.stderr)

    index_dir = out / "index"
    docs = args.data / "docs"  # a user's folder, indexed as they would; else the corpus file
    from crag_cli.index.dense import MiniLMEncoder  # (as crag index builds it: with the dense part)

    report = build_index(docs if docs.is_dir() else args.data / "corpus.jsonl", index_dir, encoder=MiniLMEncoder())
    print(f"index: {report.status}, {report.passages} passages", file=sys.stderr)
    passages = {p.id: p.text for p in BM25Index.load(index_dir).passages}
    server, web_url = start_web(args.data / "web.jsonl", out)
    print(f"web stand-in at {web_url}", file=sys.stderr)

    results, records_of = {}, {}
    previous = json.loads((out / "results.json").read_text()) if (out / "results.json").exists() else {}
    try:
        for mode in modes:
            records = run_mode(
                mode,
                questions_file,
                index_dir,
                web_url,
                args.model,
                out,
                list(questions),
                evaluator,
                args.task,
                args.prompt_cache,
            )
            unanswerable = {r["id"] for r in records if not questions[r["id"]]["answers"]}
            abstained = not_found_shares(records, questions)
            records = [r for r in records if r["id"] not in unanswerable]
            score_records(records, questions)
            results[mode] = summarise(records, passages, questions)
            if unanswerable:
                results[mode]["not_found"] = abstained
            if mode in EVALUATES and in_sample is not None:
                results[mode]["in_sample"] = in_sample
            records_of[mode] = records
            print(f"{mode}: {json.dumps(results[mode])}", file=sys.stderr)
    finally:
        server.shutdown()
    baselines = [m for m in records_of if MODES[m][:2] == ["--mode", "rag"]]
    for mode, records in records_of.items():
        if mode not in baselines and baselines:
            results[mode]["vs"] = {b: paired(records, records_of[b]) for b in baselines}
            results[mode]["vs_f1"] = {b: paired_f1(records, records_of[b]) for b in baselines}
    merged = {**{k: v for k, v in previous.items() if k not in results}, **results}
    (out / "results.json").write_text(json.dumps(merged, indent=1) + "\n")
    (out / "results.md").write_text(table(merged))
    chart(merged, out / "results.png")
    print(table(merged))


if __name__ == "__main__":
    main()
