"""Shared logic of the docs*qa bench folders' make_questions.py and check_questions.py.

Standard library only. Each folder's scripts keep their own data (questions, ABSENT,
WEB and WEB_ABSENT tables, thresholds, split counts); this module holds the rest:
building, splitting and writing the rows, loading docs/ and web.jsonl, the per-row checks and
the printed summary.
"""

import collections
import hashlib
import json
import random
import re

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
        ids = sorted((r["id"] for r in rows if _stratum(r) == st), key=lambda i: hashlib.sha256(i.encode()).hexdigest())
        for k, i in enumerate(ids):
            out[i] = "diagnosis" if k < (len(ids) + 1) // 2 else "heldout"
    return out


def _stratum(r):
    return "answerable" if r["answerable"] else ("web" if r["answer_in_web"] else "none")


def write_jsonl(path, rows):
    """Write rows to path, one JSON object a line (UTF-8, not ASCII-escaped)."""
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def write_index_splits(here, rows):
    """Write ``questions.jsonl``, the diagnosis and held-out split files and ``questions.dev.jsonl`` (= diagnosis)
    under ``here``, and print what was written (the folders split by index)."""
    diagnosis = [r for r in rows if r["split"] == "diagnosis"]
    write_jsonl(here / "questions.jsonl", rows)
    write_jsonl(here / "questions.diagnosis.jsonl", diagnosis)
    write_jsonl(here / "questions.heldout.jsonl", [r for r in rows if r["split"] == "heldout"])
    write_jsonl(here / "questions.dev.jsonl", diagnosis)
    print(f"wrote {len(rows)} questions ({len(diagnosis)} diagnosis, {len(rows) - len(diagnosis)} heldout)")


def check_split_files(here, rows, splits, fails):
    """Check each split's file (and ``questions.dev.jsonl`` = diagnosis) against the rows, and that each split holds
    both kinds; return the rows by split."""
    by_split = {s: [r for r in rows if r.get("split") == s] for s in splits}
    for s in splits:
        if load_jsonl(here / f"questions.{s}.jsonl") != by_split[s]:
            fails.append(f"questions.{s}.jsonl differs from the {s} rows of questions.jsonl")
    if load_jsonl(here / "questions.dev.jsonl") != by_split["diagnosis"]:
        fails.append("questions.dev.jsonl differs from the diagnosis rows")
    for s in splits:
        kinds = {r["answerable"] for r in by_split[s]}
        if kinds != {True, False}:
            fails.append(f"split {s} lacks answerable or unanswerable rows")
    return by_split


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
    """Return ``(docs, web_rows, web_joined)``: docs/*.md by name, web.jsonl's rows and their texts joined."""
    docs = {p.name: p.read_text(encoding="utf-8") for p in sorted((here / "docs").glob("*.md"))}
    web_text = (here / "web.jsonl").read_text(encoding="utf-8")
    web_rows = [json.loads(line) for line in web_text.splitlines() if line.strip()]
    return docs, web_rows, "\n".join(r["text"] for r in web_rows)


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


def check_and_report(
    here, rows, sources, tables, splits, fails, warns, min_answerable, min_unanswerable, max_per_file=6
):
    """The checks and summary every held-out-split folder ends with (docs3qa onwards): the split files, the answer
    spans and key terms (``sources``: load_sources' docs, web rows and joined web text; ``tables``: the ABSENT, WEB
    and WEB_ABSENT tables, strict), the counts (at least 4 answered by the web, at most ``max_per_file`` answerable
    questions a file); prints the summary and returns the exit code."""
    docs, web_rows, web_joined = sources
    by_split = check_split_files(here, rows, splits, fails)
    stripped_only, per_file = check_content(rows, docs, web_joined, *tables, fails, warns, strict=True)
    counts = check_counts(rows, per_file, fails, min_answerable, min_unanswerable, min_web=4, max_per_file=max_per_file)
    print_head(docs, web_rows, rows, counts)
    print_splits(by_split)
    return print_tail(docs, per_file, stripped_only, warns, fails)


# --------------------------------------------------------------------------- the seeded split (docs5qa onwards)

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


def write_seeded(here, prefix, answerable, unanswerable, seed, diagnosis):
    """A make_questions.py's work: the rows, split by :func:`seeded_splits`, written by :func:`write_index_splits`."""
    rows = make_rows(prefix, answerable, unanswerable, lambda i: None)
    for i, split in seeded_splits(rows, seed, diagnosis).items():
        rows[i]["split"] = split
    write_index_splits(here, rows)


def check_seeded(here, prefix, split, want, tables, min_answerable, min_unanswerable, max_per_file=6):
    """A check_questions.py's work for a seeded split: the rows of ``here``'s questions.jsonl checked (ids of
    ``prefix``; each row's split the one ``split(rows)`` gives, the folder's make_questions rule; ``want``: rows per
    (split, stratum)), then :func:`check_and_report`. Returns the exit code."""
    fails, warns = [], []
    rows = load_jsonl(here / "questions.jsonl")
    docs, web_rows, _ = load_sources(here)
    web_joined = "\n".join(norm_ws(r["text"]) for r in web_rows)  # one row a line, whitespace normalised
    want_split = split(rows)

    def split_error(i, r):
        if r.get("split") != want_split[i]:
            return f"{r.get('id')}: split {r.get('split')!r} != {want_split[i]!r} (index {i})"

    check_rows(rows, fails, split_error, id_prefix=prefix)
    got = collections.Counter((r.get("split"), stratum(r)) for r in rows)
    for key, n in want.items():
        if got[key] != n:
            fails.append(f"split {key[0]} has {got[key]} {key[1]} rows, want {n}")
    splits = tuple(dict.fromkeys(k[0] for k in want))
    sources = (docs, web_rows, web_joined)
    return check_and_report(
        here, rows, sources, tables, splits, fails, warns, min_answerable, min_unanswerable, max_per_file
    )
