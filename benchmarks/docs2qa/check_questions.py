"""Verify the docs2qa question set (held out; HTTPX docs). Standard library only.

Adapted from benchmarks/docsqa/check_questions.py.

    python check_questions.py            # exits 1 if any hard check fails

Hard checks (FAIL):
  * ids unique, fields present, every row's split == "heldout";
    questions.heldout.jsonl and questions.dev.jsonl == questions.jsonl;
  * every answerable answer span occurs whole-word, case-insensitively in its doc
    file (whitespace normalised; if it only matches after stripping markdown
    backticks/asterisks this is reported as "stripped-only");
  * answer spans are 1-6 words and contain a letter or digit;
  * at least 48 answerable / 16 unanswerable / 4 answer_in_web, >= 15 files,
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

# Unanswerable questions: regexes (case-insensitive) that must NOT match any doc.
# They encode the key terms an answer would have to contain.
ABSENT = {
    "docs2qa-102": [r"TrioBackend", r"AnyIOBackend"],
    "docs2qa-103": [r"MockBackend", r"MockStream"],
    "docs2qa-104": [r"h2c", r"Upgrade: ?h2"],
    "docs2qa-105": [r"prior knowledge", r"http1\s*=", r"disabl\w* HTTP/1\.1", r"\bALPN\b"],
    "docs2qa-106": [r"IPv6", r"AF_INET6", r'"::"'],
    "docs2qa-107": [r"max_redirects", r"maximum number of redirects", r"redirects?[^\n]*\b\d+ (times|hops)"],
    "docs2qa-108": [r"python-httpx/", r"default user-?agent", r"User-Agent[^\n]*httpx/"],
    "docs2qa-109": [r"chunk_size\s*=", r"default chunk", r"chunk size[^\n]*default"],
    "docs2qa-110": [r"cookies per", r"per domain", r"maximum number of cookies", r"cookie limit"],
    "docs2qa-111": [r"backoff", r"between (connection )?retries", r"retry delay", r"exponential"],
    "docs2qa-112": [r"\bMD5\b", r"SHA-?256", r"\bSHA-?1\b", r"\bqop\b", r"hash algorithm"],
    "docs2qa-113": [r"TLSv1", r"TLS ?1\.\d", r"minimum_version", r"minimum TLS"],
    "docs2qa-114": [r"per[- ]host", r"max_connections_per", r"connections per (host|origin)"],
    "docs2qa-115": [
        r"HTTPX_LOG_LEVEL",
        r"LOG_LEVEL",
        r"logging[^\n]*environment variable",
        r"environment variable[^\n]*logging",
    ],
    "docs2qa-116": [r"retries\s*=\s*0", r"retries[^\n]*default", r"default[^\n]*retr"],
    "docs2qa-117": [r"_netrc", r"\bWindows\b"],
    "docs2qa-118": [r"concurrent streams", r"max_concurrent", r"MAX_CONCURRENT_STREAMS"],
    "docs2qa-119": [r"100[- ]continue", r"Expect:", r"\bExpect header"],
    "docs2qa-120": [r"header size", r"max_header", r"headers? (are|is) too (large|long)", r"\b(64|100) ?KB\b"],
}
# Unanswerable but answered by the httpcore stand-in web: regexes that must all match web.jsonl.
WEB = {
    "docs2qa-102": [r"recommend using the httpcore\.TrioBackend"],
    "docs2qa-103": [r"MockBackend", r"accept a list of bytes"],
    "docs2qa-104": [r"Upgrade: h2c", r"This mechanism is not supported by httpcore"],
    "docs2qa-105": [r"Prior Knowledge", r"disabling HTTP/1\.1 support"],
    "docs2qa-106": [r'local_address="::"\s+will connect using an AF_INET6 address \(IPv6\)'],
}
# Unanswerable, not in web: regex that must NOT match web.jsonl (where web is close).
WEB_ABSENT = {
    "docs2qa-107": r"max_redirects",
    "docs2qa-109": r"chunk_size",
    "docs2qa-110": r"cookies per|per domain",
    "docs2qa-111": r"backoff",
    "docs2qa-114": r"per[- ]host",
    "docs2qa-116": r"retries[^\n]*default",
    "docs2qa-118": r"concurrent streams|max_concurrent",
    "docs2qa-120": r"header size|max_header",
}

FIELDS = ["id", "question", "answers", "doc", "answerable", "answer_in_local", "answer_in_web", "split"]


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

    ids = [r.get("id") for r in rows]
    for qid, c in collections.Counter(ids).items():
        if c > 1:
            fails.append(f"duplicate id {qid}")
    for r in rows:
        missing = [f for f in FIELDS if f not in r]
        if missing:
            fails.append(f"{r.get('id')}: missing fields {missing}")
        if r.get("split") != "heldout":
            fails.append(f"{r.get('id')}: split {r.get('split')!r} != 'heldout' (the whole set is held out)")

    # split files: all three hold the same rows
    for name in ("questions.heldout.jsonl", "questions.dev.jsonl"):
        if load(name) != rows:
            fails.append(f"{name} differs from questions.jsonl")
    if (HERE / "questions.diagnosis.jsonl").exists():
        fails.append("questions.diagnosis.jsonl exists, but this set has no diagnosis part")

    stripped_only, per_file = [], collections.Counter()
    for r in rows:
        qid = r["id"]
        if r["answerable"]:
            if not (r["answer_in_local"] is True and r["doc"] and r["answers"]):
                fails.append(f"{qid}: answerable row needs doc, answers, answer_in_local=true")
                continue
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

    n_ans = sum(r["answerable"] for r in rows)
    n_un = len(rows) - n_ans
    n_web = sum(1 for r in rows if r["answer_in_web"])
    if n_ans < 48:
        fails.append(f"only {n_ans} answerable (< 48)")
    if n_un < 16:
        fails.append(f"only {n_un} unanswerable (< 16)")
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
    print(
        f"questions: {len(rows)} ({n_ans} answerable, {n_un} unanswerable, "
        f"{n_web} unanswerable-but-in-web); split: all heldout"
    )
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
