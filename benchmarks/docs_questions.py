"""The docs*qa domains' question files: made from each domain's ``questions.py`` and checked against its docs.

Standard library only. A domain (``python benchmarks/data.py unpack DOMAIN`` puts it in ``benchmarks/DOMAIN/``)
holds ``questions.py``: the hand-written questions (ANSWERABLE, UNANSWERABLE), its split rule and counts, and the
tables that check them (ABSENT, WEB, WEB_ABSENT). This module holds the rest:

    python benchmarks/docs_questions.py make docs6qa    # writes questions.jsonl and its split files
    python benchmarks/docs_questions.py check docs6qa   # exits 1 if any hard check fails

(a domain name is ``benchmarks/NAME``, unpacked on demand; any folder with a ``questions.py`` works too).

Hard checks (FAIL):
  * the question files hold exactly the rows questions.py makes: ids PREFIX-001 ... in order and unique, fields
    present, each row's split the domain's rule (SPLIT: "hash", stratified by sha256(id); "heldout", every row;
    "thirds", row i is "diagnosis" when i % 3 == 0; "seeded", a seeded shuffle within the strata answerable /
    unanswerable-in-web / unanswerable, WANT rows per split and stratum); questions.SPLIT.jsonl the rows of each
    split, questions.dev.jsonl the diagnosis rows (DEV = "all": every row); each split holds both kinds;
  * every answerable answer span occurs whole-word, case-insensitively in its doc file (whitespace normalised;
    one that only matches after stripping backticks/asterisks is reported as "stripped-only"); spans are 1-6
    words and contain a letter or digit;
  * the counts of COUNTS (answerable, unanswerable, answered by the web, questions per file; >= 15 files);
  * for unanswerable questions: none of the key terms of ABSENT occurs in any file of docs/; for
    answer_in_web == true every evidence regex of WEB occurs in web.jsonl (its rows' texts, whitespace
    normalised, one a line); for ids in WEB_ABSENT the pattern does not occur in web.jsonl; no table names a row
    that is not unanswerable, and no answerable row has answer_in_web.
Soft checks (WARN): an answer span that also occurs in the question.
"""

import argparse
import collections
import hashlib
import importlib.util
import json
import random
import re
import sys
from pathlib import Path

import data

HERE = Path(__file__).resolve().parent

DOC_TYPES = (".md", ".rst")
FIELDS = ["id", "question", "answers", "doc", "answerable", "answer_in_local", "answer_in_web", "split"]


def make_rows(prefix, answerable, unanswerable, split_of):
    """Build the question rows, answerable first.

    Parameters
    ----------
    prefix : str
        Id prefix; row i gets id ``f"{prefix}-{i + 1:03d}"``.
    answerable : list of (doc, question, answers)
    unanswerable : list of (question, answer_in_web)
    split_of : callable
        ``split_of(i)`` gives row i's split (None to assign it later).

    Returns
    -------
    list of dict
    """
    rows = []
    for doc, q, ans in answerable:
        rows.append(_row(prefix, len(rows), q, ans, doc, True, False, split_of))
    for q, web in unanswerable:
        rows.append(_row(prefix, len(rows), q, [], None, False, web, split_of))
    return rows


def _row(prefix, i, question, answers, doc, answerable, in_web, split_of):
    return {
        "id": f"{prefix}-{i + 1:03d}",
        "question": question,
        "answers": answers,
        "doc": doc,
        "answerable": answerable,
        "answer_in_local": answerable,
        "answer_in_web": in_web,
        "split": split_of(i),
    }


def hash_splits(rows):
    """Stratified hash split: id -> "diagnosis" or "heldout".

    Strata are answerable / unanswerable but in web / unanswerable everywhere; within a
    stratum ids are ordered by sha256(id) hex digest, the first ceil(n/2) go to diagnosis.
    """
    out = {}
    for st in ("answerable", "web", "none"):
        ids = sorted((r["id"] for r in rows if stratum(r) == st), key=lambda i: hashlib.sha256(i.encode()).hexdigest())
        for k, i in enumerate(ids):
            out[i] = "diagnosis" if k < (len(ids) + 1) // 2 else "heldout"
    return out


def write_jsonl(path, rows):
    """Write rows to path, one JSON object a line (UTF-8, not ASCII-escaped)."""
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def print_splits(by_split):
    """One summary line per split."""
    for s, rs in by_split.items():
        a = sum(r["answerable"] for r in rs)
        w = sum(1 for r in rs if r["answer_in_web"])
        print(f"  {s}: {len(rs)} ({a} answerable, {len(rs) - a} unanswerable, {w} in web)")


def load_jsonl(path):
    """Read the non-blank lines of a JSON-lines file."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_sources(here):
    """Return ``(docs, web_rows, web_joined)``: docs/*.md and *.rst by name, web.jsonl's rows and their texts, whitespace
    normalised, one a line."""
    docs = {p.name: p.read_text(encoding="utf-8") for p in sorted((here / "docs").iterdir()) if p.suffix in DOC_TYPES}
    web_rows = load_jsonl(here / "web.jsonl")
    return docs, web_rows, "\n".join(norm_ws(r["text"]) for r in web_rows)


def norm_ws(s):
    return re.sub(r"\s+", " ", s)


def strip_md(s):
    return norm_ws(s.replace("`", "").replace("*", ""))


def span_re(span):
    """Whole-word, case-insensitive regex for an answer span (whitespace normalised)."""
    return re.compile(r"(?<!\w)" + re.escape(norm_ws(span.strip())) + r"(?!\w)", re.I)


def check_rows(rows, fails, split_error, id_prefix=None):
    """Unique ids, fields present and each row's split.

    Parameters
    ----------
    rows : list of dict
    fails : list of str
        Failure messages are appended here.
    split_error : callable
        ``split_error(i, row)`` gives a failure message or None.
    id_prefix : str, optional
        If given, row i must have id ``f"{id_prefix}-{i + 1:03d}"`` (duplicates are then reported last).
    """
    if id_prefix is None:
        _check_unique(rows, fails)
    for i, r in enumerate(rows):
        if id_prefix is not None:
            want_id = f"{id_prefix}-{i + 1:03d}"
            if r.get("id") != want_id:
                fails.append(f"row {i}: id {r.get('id')!r} != {want_id!r}")
        missing = [f for f in FIELDS if f not in r]
        if missing:
            fails.append(f"{r.get('id')}: missing fields {missing}")
        msg = split_error(i, r)
        if msg:
            fails.append(msg)
    if id_prefix is not None:
        _check_unique(rows, fails)


def _check_unique(rows, fails):
    for qid, c in collections.Counter(r.get("id") for r in rows).items():
        if c > 1:
            fails.append(f"duplicate id {qid}")


def check_content(rows, docs, web_joined, absent, web, web_absent, fails, warns, strict=False):
    """Check answer spans against docs/ and key terms against docs/ and web.jsonl.

    Parameters
    ----------
    rows : list of dict
    docs : dict
        Doc file name -> text.
    web_joined : str
        The texts of web.jsonl joined.
    absent : dict
        Id -> regexes that must not match any doc.
    web : dict
        Id -> regex (or list of regexes) that must match web.jsonl.
    web_absent : dict
        Id -> regex that must not match web.jsonl.
    fails, warns : list of str
        Messages are appended here.
    strict : bool
        Also fail answerable rows with answer_in_web and table entries for ids that
        are not unanswerable rows.

    Returns
    -------
    stripped_only : list of str
        Spans found only after stripping backticks/asterisks.
    per_file : collections.Counter
        Answerable questions per doc file.
    """
    stripped_only, per_file = [], collections.Counter()
    for r in rows:
        qid = r["id"]
        if r["answerable"]:
            if not (r["answer_in_local"] is True and r["doc"] and r["answers"]):
                fails.append(f"{qid}: answerable row needs doc, answers, answer_in_local=true")
                continue
            if strict and r["answer_in_web"]:
                fails.append(f"{qid}: answerable row must have answer_in_web=false")
            if r["doc"] not in docs:
                fails.append(f"{qid}: doc {r['doc']} not in docs/")
                continue
            per_file[r["doc"]] += 1
            raw, stripped = norm_ws(docs[r["doc"]]), strip_md(docs[r["doc"]])
            for a in r["answers"]:
                n_words = len(a.split())
                if not 1 <= n_words <= 6:
                    fails.append(f"{qid}: answer {a!r} has {n_words} words")
                if not re.search(r"[A-Za-z0-9]", a):
                    fails.append(f"{qid}: answer {a!r} has no letter or digit")
                rx = span_re(a)
                if rx.search(raw):
                    pass
                elif rx.search(stripped):
                    stripped_only.append(f"{qid}: {a!r} in {r['doc']}")
                else:
                    fails.append(f"{qid}: answer {a!r} not found in {r['doc']}")
                if rx.search(r["question"]):
                    warns.append(f"{qid}: answer {a!r} also occurs in the question")
        else:
            if r["answers"] or r["doc"] is not None or r["answer_in_local"]:
                fails.append(f"{qid}: unanswerable row must have answers=[], doc=null, answer_in_local=false")
            pats = absent.get(qid)
            if not pats:
                fails.append(f"{qid}: no ABSENT key terms recorded")
            for p in pats or []:
                for name, text in docs.items():
                    m = re.search(p, text, re.I)
                    if m:
                        fails.append(f"{qid}: key term /{p}/ found in {name}: {m.group(0)!r}")
            if r["answer_in_web"]:
                pats = web.get(qid)
                if not pats:
                    fails.append(f"{qid}: answer_in_web=true but no WEB evidence recorded")
                for p in [pats] if isinstance(pats, str) else pats or []:
                    if not re.search(p, web_joined, re.I):
                        fails.append(f"{qid}: WEB evidence /{p}/ not in web.jsonl")
            else:
                if qid in web:
                    fails.append(f"{qid}: WEB evidence recorded but answer_in_web=false")
                p = web_absent.get(qid)
                if p and re.search(p, web_joined, re.I):
                    fails.append(f"{qid}: /{p}/ found in web.jsonl although answer_in_web=false")
    if strict:
        unknown = (set(absent) | set(web) | set(web_absent)) - {r["id"] for r in rows if not r["answerable"]}
        for qid in sorted(unknown):
            fails.append(f"{qid}: key terms recorded for a row that is not unanswerable")
    return stripped_only, per_file


def check_counts(rows, per_file, fails, min_answerable, min_unanswerable, min_web=None, max_per_file=6, min_files=15):
    """Minimum counts and file spread; returns ``(n_answerable, n_unanswerable, n_web)``."""
    n_ans = sum(r["answerable"] for r in rows)
    n_un = len(rows) - n_ans
    n_web = sum(1 for r in rows if r["answer_in_web"])
    if n_ans < min_answerable:
        fails.append(f"only {n_ans} answerable (< {min_answerable})")
    if n_un < min_unanswerable:
        fails.append(f"only {n_un} unanswerable (< {min_unanswerable})")
    if min_web is not None and n_web < min_web:
        fails.append(f"only {n_web} answer_in_web (< {min_web})")
    if len(per_file) < min_files:
        fails.append(f"answerable questions cover only {len(per_file)} files (< {min_files})")
    for f, c in per_file.items():
        if c > max_per_file:
            fails.append(f"{f} has {c} questions (> {max_per_file})")
    return n_ans, n_un, n_web


def print_head(docs, web_rows, rows, counts, suffix=""):
    """Print the summary's first lines: docs, web and question counts (``counts`` from check_counts)."""
    n_ans, n_un, n_web = counts
    print(f"docs: {len(docs)} files, {sum(len(t.split()) for t in docs.values())} words")
    print(f"web:  {len(web_rows)} rows, {len({r['title'] for r in web_rows})} pages")
    print(f"questions: {len(rows)} ({n_ans} answerable, {n_un} unanswerable, {n_web} unanswerable-but-in-web){suffix}")


def print_tail(docs, per_file, stripped_only, warns, fails):
    """Print files per doc, stripped-only spans, warnings and failures; return the exit code (1 if any failure)."""
    print(f"files with questions: {len(per_file)} of {len(docs)}; max per file: {max(per_file.values())}")
    for f, c in sorted(per_file.items(), key=lambda x: (-x[1], x[0])):
        print(f"  {c}  {f}")
    print(f"answers matching only after stripping backticks/asterisks: {len(stripped_only)}")
    for s in stripped_only:
        print(f"  stripped-only: {s}")
    for w in warns:
        print(f"WARN {w}")
    for f in fails:
        print(f"FAIL {f}")
    print("OK" if not fails else f"{len(fails)} failure(s)")
    return 1 if fails else 0


STRATA = ("answerable", "web", "none")  # answerable; unanswerable but answered by the web; unanswerable everywhere


def stratum(row):
    """The row's stratum of :data:`STRATA`."""
    return "answerable" if row["answerable"] else ("web" if row["answer_in_web"] else "none")


def seeded_splits(rows, seed, diagnosis):
    """Row index -> "diagnosis" / "heldout": within each stratum (in :data:`STRATA` order, one
    ``random.Random(seed)``) the row indices are shuffled and the first ``diagnosis[stratum]`` go to "diagnosis"."""
    rng = random.Random(seed)
    out = {}
    for st in STRATA:
        idx = [i for i, r in enumerate(rows) if stratum(r) == st]
        rng.shuffle(idx)
        for k, i in enumerate(idx):
            out[i] = "diagnosis" if k < diagnosis[st] else "heldout"
    return out


# --------------------------------------------------------------------------- a domain's questions.py made and checked


def load_spec(here):
    """The domain folder's ``questions.py`` as a module."""
    sys.dont_write_bytecode = True  # write nothing into the domain's folder
    spec = importlib.util.spec_from_file_location(f"questions_{here.name}", here / "questions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def splits_of(rows, spec):
    """Row index -> split by the domain's rule (``spec.SPLIT``)."""
    if spec.SPLIT == "hash":
        by_id = hash_splits(rows)
        return {i: by_id[r["id"]] for i, r in enumerate(rows)}
    if spec.SPLIT == "heldout":
        return {i: "heldout" for i in range(len(rows))}
    if spec.SPLIT == "thirds":
        return {i: "diagnosis" if i % 3 == 0 else "heldout" for i in range(len(rows))}
    if spec.SPLIT == "seeded":
        return seeded_splits(rows, spec.SEED, spec.DIAGNOSIS)
    raise ValueError(f"unknown SPLIT {spec.SPLIT!r}")


def build(spec):
    """The rows the domain's questions.py makes, split."""
    rows = make_rows(spec.PREFIX, spec.ANSWERABLE, spec.UNANSWERABLE, lambda i: None)
    for i, split in splits_of(rows, spec).items():
        rows[i]["split"] = split
    return rows


def files_of(rows, spec):
    """File name -> rows: questions.jsonl, one file a split present, questions.dev.jsonl (diagnosis, or DEV)."""
    out = {"questions.jsonl": rows}
    for split in ("diagnosis", "heldout"):
        part = [r for r in rows if r.get("split") == split]
        if part:
            out[f"questions.{split}.jsonl"] = part
    out["questions.dev.jsonl"] = (
        rows if getattr(spec, "DEV", "diagnosis") == "all" else out["questions.diagnosis.jsonl"]
    )
    return out


def make(here):
    """Write the domain's question files from its questions.py; print what was written."""
    spec = load_spec(here)
    rows = build(spec)
    for name, part in files_of(rows, spec).items():
        write_jsonl(here / name, part)
    n_diag = sum(r["split"] == "diagnosis" for r in rows)
    print(f"wrote {len(rows)} questions ({n_diag} diagnosis, {len(rows) - n_diag} heldout)")


def check(here):
    """Check the domain's question files against its questions.py, docs/ and web.jsonl (the module docstring's list);
    print a summary and return the exit code (1 on any failure)."""
    spec, fails, warns = load_spec(here), [], []
    rows, want = load_jsonl(here / "questions.jsonl"), build(spec)
    docs, web_rows, web_joined = load_sources(here)

    def split_error(i, r):
        got, rule = r.get("split"), want[i]["split"] if i < len(want) else None
        return None if got == rule else f"{r.get('id')}: split {got!r} != {rule!r} (index {i}, rule {spec.SPLIT})"

    check_rows(rows, fails, split_error, id_prefix=spec.PREFIX)
    if rows != want:
        fails.append("questions.jsonl differs from the rows questions.py makes (run: docs_questions.py make)")
    files = files_of(rows, spec)
    for name in sorted({p.name for p in here.glob("questions.*jsonl")} | set(files)):
        if name not in files:
            fails.append(f"{name} is there, but no row is of its split")
        elif not (here / name).is_file() or load_jsonl(here / name) != files[name]:
            fails.append(f"{name} differs from the rows of questions.jsonl it should hold")
    splits = [s for s in ("diagnosis", "heldout") if f"questions.{s}.jsonl" in files]
    by_split = {s: [r for r in rows if r.get("split") == s] for s in splits}
    for split, part in by_split.items():
        if {r["answerable"] for r in part} != {True, False}:
            fails.append(f"split {split} lacks answerable or unanswerable rows")
    got = collections.Counter((r.get("split"), stratum(r)) for r in rows)
    for key, n in getattr(spec, "WANT", {}).items():
        if got[key] != n:
            fails.append(f"split {key[0]} has {got[key]} {key[1]} rows, want {n}")
    tables = (spec.ABSENT, spec.WEB, spec.WEB_ABSENT)
    stripped_only, per_file = check_content(rows, docs, web_joined, *tables, fails, warns, strict=True)
    counts = check_counts(rows, per_file, fails, **spec.COUNTS)
    print_head(docs, web_rows, rows, counts)
    print_splits(by_split)
    return print_tail(docs, per_file, stripped_only, warns, fails)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Make or check a docs*qa domain's question files.")
    parser.add_argument("command", choices=("make", "check"))
    parser.add_argument("domain", help="a domain's name (benchmarks/NAME, unpacked on demand) or its folder")
    args = parser.parse_args(argv)
    here = Path(args.domain) if "/" in args.domain else HERE / args.domain
    data.on_demand(str(here))
    if not (here / "questions.py").is_file():
        parser.error(f"{here} holds no questions.py")
    if args.command == "make":
        make(here)
        return 0
    return check(here)


if __name__ == "__main__":
    sys.exit(main())
