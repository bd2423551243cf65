"""Verify the docs3qa question set (Click docs; diagnosis + held-out splits). Standard library only.

Adapted from benchmarks/docs2qa/check_questions.py.

    python check_questions.py            # exits 1 if any hard check fails

Hard checks (FAIL):
  * ids are docs3qa-001 ... in order and unique, fields present;
  * split: the row at 0-based index i is "diagnosis" when i % 3 == 0, else
    "heldout"; questions.diagnosis.jsonl / questions.heldout.jsonl hold exactly
    the rows of each split, questions.dev.jsonl == questions.diagnosis.jsonl;
    each split holds both answerable and unanswerable rows;
  * every answerable answer span occurs whole-word, case-insensitively in its doc
    file (whitespace normalised; if it only matches after stripping markdown
    backticks/asterisks this is reported as "stripped-only");
  * answer spans are 1-6 words and contain a letter or digit;
  * at least 96 answerable / 24 unanswerable / 4 answer_in_web, >= 15 files,
    <= 6 questions per file;
  * for unanswerable questions: none of the key terms listed in ABSENT occur in
    any file of docs/; for answer_in_web == true every evidence regex in WEB
    occurs in web.jsonl; for ids in WEB_ABSENT the pattern does not occur in web.jsonl.
Soft checks (WARN): an answer span that also occurs in the question.
"""

import collections
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE / "docs"

# Unanswerable questions: regexes (case-insensitive unless scoped with (?-i:...))
# that must NOT match any doc. They encode the key terms an answer would have to contain.
ABSENT = {
    "docs3qa-097": [r"%Y", r"strptime", r"formats\s*=", r"date formats?"],
    "docs3qa-098": [r"resolve_path", r"symlink", r"realpath", r"fully resolved"],
    "docs3qa-099": [r"path_type", r"pathlib"],
    "docs3qa-100": [r"reverse", r"inverse", r"swap\w*[^\n]*(foreground|background)"],
    "docs3qa-101": [r"Show this message", r"help_option[^\n]*help\s*="],
    "docs3qa-102": [r"\b36\b", r"\bwidth\s*=\s*\d", r"bar_template", r"bar width"],
    "docs3qa-103": [r"fill_char", r"empty_char", r"fill(ed)? char"],
    "docs3qa-104": [r"Press any key", r"pause\([^)]+\)", r"any key to"],
    "docs3qa-105": [r"(?-i:\$?\bEDITOR\b)", r"(?-i:\bVISUAL\b)", r"notepad", r"\bvim?\b", r"\bnano\b"],
    "docs3qa-106": [r"roaming", r"APPDATA", r"force_posix", r"Application Data"],
    "docs3qa-107": [r"prompt_suffix", r"suffix"],
    "docs3qa-108": [r"\b45\b", r"short_help[^\n]*\d+ char", r"\blimit\s*="],
    "docs3qa-109": [r"indent_increment", r"indent\w* (of|by) \d", r"\bdedent"],
    "docs3qa-110": [r"col_max", r"col_spacing", r"\b30\b"],
    "docs3qa-111": [r"charset", r"CliRunner\([^)]*encoding"],
    "docs3qa-112": [r"NO_COLOR", r"FORCE_COLOR", r"disabl\w* colou?rs?"],
    "docs3qa-113": [r"package_name", r"distribution name", r"version_option\([^)]*\w+\s*="],
    "docs3qa-114": [r"%\(prog\)s", r"%\(version\)s", r"version_option\([^)]*message"],
    "docs3qa-115": [r"format_usage", r"get_usage", r"collect_usage_pieces"],
    "docs3qa-116": [r"\bRGB\b", r"\b256\b", r"8-bit", r"24-bit", r"true ?colou?r"],
    "docs3qa-117": [r"show_choices"],
    "docs3qa-118": [r"catch_exceptions", r"propagat\w* (the )?exception"],
    "docs3qa-119": [
        r"\bretries\b",
        r"max_tries",
        r"\d+ (attempts|tries)",
        r"number of (attempts|tries|retries)",
        r"(ask|prompt)s? again",
    ],
    "docs3qa-120": [r"\bCOLUMNS\b", r"get_terminal_size"],
}
# Unanswerable but answered by the Typer stand-in web: regexes that must all match web.jsonl.
WEB = {
    "docs3qa-097": [r"%Y-%m-%dT%H:%M:%S", r"accept any string from the following formats"],
    "docs3qa-098": [r"resolve_path: if this is true, then the path is fully resolved", r"it.s absolute"],
    "docs3qa-099": [
        r"path_type: optionally a string type that should be used to represent the path",
        r"The default is None",
    ],
    "docs3qa-100": [r"reverse: enable or disable inverse rendering \(foreground becomes background"],
    "docs3qa-101": [r"--help\s+Show this message and exit\."],
}
# Unanswerable, not in web: regex that must NOT match web.jsonl (where web is close).
WEB_ABSENT = {
    "docs3qa-102": r"progressbar\([^)\n]*width|bar width|bar_template",
    "docs3qa-103": r"fill_char|empty_char",
    "docs3qa-104": r"Press any key",
    "docs3qa-105": r"(?-i:\bEDITOR\b)|notepad",
    "docs3qa-106": r"roaming|APPDATA",
    "docs3qa-107": r"prompt_suffix",
    "docs3qa-108": r"\b45\b",
    "docs3qa-109": r"indent_increment",
    "docs3qa-110": r"col_max",
    "docs3qa-111": r"charset",
    "docs3qa-112": r"NO_COLOR",
    "docs3qa-113": r"package_name",
    "docs3qa-114": r"%\(version\)s",
    "docs3qa-115": r"format_usage|get_usage",
    "docs3qa-116": r"\bRGB\b|\b256\b",
    "docs3qa-117": r"show_choices",
    "docs3qa-118": r"catch_exceptions",
    "docs3qa-119": r"max_tries|number of (attempts|tries|retries)",
    "docs3qa-120": r"\bCOLUMNS\b",
}

FIELDS = ["id", "question", "answers", "doc", "answerable", "answer_in_local", "answer_in_web", "split"]
SPLITS = ("diagnosis", "heldout")


def norm_ws(s):
    return re.sub(r"\s+", " ", s)


def strip_md(s):
    return norm_ws(s.replace("`", "").replace("*", ""))


def span_re(span):
    return re.compile(r"(?<!\w)" + re.escape(norm_ws(span.strip())) + r"(?!\w)", re.I)


def load(name):
    with open(HERE / name, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main():
    fails, warns = [], []
    rows = load("questions.jsonl")
    docs = {p.name: p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))}
    web_text = (HERE / "web.jsonl").read_text(encoding="utf-8")
    web_rows = [json.loads(line) for line in web_text.splitlines() if line.strip()]
    web_joined = "\n".join(r["text"] for r in web_rows)

    # ids, fields, splits
    for i, r in enumerate(rows):
        want_id = f"docs3qa-{i + 1:03d}"
        if r.get("id") != want_id:
            fails.append(f"row {i}: id {r.get('id')!r} != {want_id!r}")
        missing = [f for f in FIELDS if f not in r]
        if missing:
            fails.append(f"{r.get('id')}: missing fields {missing}")
        want_split = "diagnosis" if i % 3 == 0 else "heldout"
        if r.get("split") != want_split:
            fails.append(f"{r.get('id')}: split {r.get('split')!r} != {want_split!r} (index {i})")
    for qid, c in collections.Counter(r.get("id") for r in rows).items():
        if c > 1:
            fails.append(f"duplicate id {qid}")

    # split files
    by_split = {s: [r for r in rows if r.get("split") == s] for s in SPLITS}
    for s in SPLITS:
        if load(f"questions.{s}.jsonl") != by_split[s]:
            fails.append(f"questions.{s}.jsonl differs from the {s} rows of questions.jsonl")
    if load("questions.dev.jsonl") != by_split["diagnosis"]:
        fails.append("questions.dev.jsonl differs from the diagnosis rows")
    for s in SPLITS:
        kinds = {r["answerable"] for r in by_split[s]}
        if kinds != {True, False}:
            fails.append(f"split {s} lacks answerable or unanswerable rows")

    stripped_only, per_file = [], collections.Counter()
    for r in rows:
        qid = r["id"]
        if r["answerable"]:
            if not (r["answer_in_local"] is True and r["doc"] and r["answers"]):
                fails.append(f"{qid}: answerable row needs doc, answers, answer_in_local=true")
                continue
            if r["answer_in_web"]:
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
            pats = ABSENT.get(qid)
            if not pats:
                fails.append(f"{qid}: no ABSENT key terms recorded")
            for p in pats or []:
                for name, text in docs.items():
                    m = re.search(p, text, re.I)
                    if m:
                        fails.append(f"{qid}: key term /{p}/ found in {name}: {m.group(0)!r}")
            if r["answer_in_web"]:
                pats = WEB.get(qid)
                if not pats:
                    fails.append(f"{qid}: answer_in_web=true but no WEB evidence recorded")
                for p in pats or []:
                    if not re.search(p, web_joined, re.I):
                        fails.append(f"{qid}: WEB evidence /{p}/ not in web.jsonl")
            else:
                if qid in WEB:
                    fails.append(f"{qid}: WEB evidence recorded but answer_in_web=false")
                p = WEB_ABSENT.get(qid)
                if p and re.search(p, web_joined, re.I):
                    fails.append(f"{qid}: /{p}/ found in web.jsonl although answer_in_web=false")
    unknown = (set(ABSENT) | set(WEB) | set(WEB_ABSENT)) - {r["id"] for r in rows if not r["answerable"]}
    for qid in sorted(unknown):
        fails.append(f"{qid}: key terms recorded for a row that is not unanswerable")

    n_ans = sum(r["answerable"] for r in rows)
    n_un = len(rows) - n_ans
    n_web = sum(1 for r in rows if r["answer_in_web"])
    if n_ans < 96:
        fails.append(f"only {n_ans} answerable (< 96)")
    if n_un < 24:
        fails.append(f"only {n_un} unanswerable (< 24)")
    if n_web < 4:
        fails.append(f"only {n_web} answer_in_web (< 4)")
    if len(per_file) < 15:
        fails.append(f"answerable questions cover only {len(per_file)} files (< 15)")
    for f, c in per_file.items():
        if c > 6:
            fails.append(f"{f} has {c} questions (> 6)")

    # summary
    print(f"docs: {len(docs)} files, {sum(len(t.split()) for t in docs.values())} words")
    print(f"web:  {len(web_rows)} rows, {len({r['title'] for r in web_rows})} pages")
    print(f"questions: {len(rows)} ({n_ans} answerable, {n_un} unanswerable, {n_web} unanswerable-but-in-web)")
    for s in SPLITS:
        rs = by_split[s]
        a = sum(r["answerable"] for r in rs)
        w = sum(1 for r in rs if r["answer_in_web"])
        print(f"  {s}: {len(rs)} ({a} answerable, {len(rs) - a} unanswerable, {w} in web)")
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


if __name__ == "__main__":
    sys.exit(main())
