"""Verify the docsqa question set. Standard library only.

    python check_questions.py            # exits 1 if any hard check fails

Hard checks (FAIL):
  * ids unique, fields present, split == stratified sha256(id) rule, split files consistent
    with questions.jsonl, questions.dev.jsonl == questions.jsonl;
  * every answerable answer span occurs whole-word, case-insensitively in its doc
    file (whitespace normalised; if it only matches after stripping markdown
    backticks/asterisks this is reported as "stripped-only");
  * answer spans are 1-6 words and contain a letter or digit;
  * at least 64 answerable / 20 unanswerable, >= 15 files, <= 8 questions per file;
  * for unanswerable questions: none of the key terms listed in ABSENT occur in
    any file of docs/; for answer_in_web == true the evidence in WEB occurs in
    web.jsonl; for ids in WEB_ABSENT the pattern does not occur in web.jsonl.
Soft checks (WARN): an answer span that also occurs in the question.
"""

import collections
import hashlib
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE / "docs"

# Unanswerable questions: regexes (case-insensitive) that must NOT match any doc.
# They encode the key terms an answer would have to contain.
ABSENT = {
    "docsqa-094": [r"keep-?alive"],
    "docsqa-095": [r"message size", r"\bmax_size\b", r"16777216", r"ws-max-size", r"\b16 ?MB\b"],
    "docsqa-096": [r"backlog", r"\b2048\b"],
    "docsqa-097": [r"WEB_CONCURRENCY", r"worker process"],
    "docsqa-098": [r"\b503\b", r"limit-concurrency", r"concurrency limit[^\n]*\b50\d\b"],
    "docsqa-099": [r"reload[-_]delay", r"0\.25 ?s", r"reload[^\n]*0\.25"],
    "docsqa-100": [r"\bping\b", r"ping[-_ ]interval"],
    "docsqa-101": [r"cipher", r"ssl[-_]", r"TLSv1\b(?!\.)"],
    "docsqa-102": [r"sha-?1\b", r"sha-?256", r"hmac", r"hash algorithm", r"signing algorithm"],
    "docsqa-103": [r"private network", r"allow_private_network"],
    "docsqa-104": [r"max_body", r"body_limit", r"\b413\b", r"body size limit", r"maximum (request )?body"],
    "docsqa-105": [r"cache-control", r"max-age"],
    "docsqa-106": [r"requests per minute", r"rate limit[^\n]*default", r"default[^\n]*rate limit"],
    "docsqa-107": [r"follow_redirects\s*=", r"follows? redirects"],
    "docsqa-108": [r"www_redirect[^\n]*\b30\d\b", r"redirected to their www counterparts[^\n]*\b30\d\b"],
    "docsqa-109": [r"startup[^\n]*timeout", r"timeout[^\n]*startup", r"lifespan[^\n]*timeout"],
    "docsqa-110": [r"security fixes", r"support policy", r"supported versions", r"end[- ]of[- ]life", r"\bLTS\b"],
    "docsqa-111": [r"separators"],
    "docsqa-112": [r"Route\([^\n]*timeout", r"per-route timeout", r"route timeout"],
    "docsqa-113": [r"(scope|AuthCredentials)[^\n]*expir"],
    "docsqa-114": [r"per client", r"connections per", r"max_connections", r"connection limit"],
    "docsqa-115": [r"cache backend", r"CacheMiddleware", r"response cach"],
    "docsqa-116": [r"graceful", r"shutdown timeout"],
    "docsqa-117": [r"\bmako\b", r"chameleon"],
    "docsqa-118": [r"max_redirects"],
    "docsqa-119": [r"exclude_paths?", r"excluded_paths"],
}
# Unanswerable but answered by the uvicorn stand-in web: regex that must match web.jsonl.
WEB = {
    "docsqa-094": r"timeout-keep-alive[^\n]*Default: 5\b",
    "docsqa-095": r"ws-max-size[^\n]*16777216",
    "docsqa-096": r"backlog[^\n]*2048",
    "docsqa-097": r"workers[^\n]*WEB_CONCURRENCY",
    "docsqa-098": r"limit-concurrency[^\n]*503",
    "docsqa-099": r"reload-delay[^\n]*0\.25",
    "docsqa-100": r"ws-ping-interval[^\n]*20\.0",
    "docsqa-101": r"ssl-ciphers[^\n]*TLSv1",
}
# Unanswerable, not in web: regex that must NOT match web.jsonl (where web is close).
WEB_ABSENT = {
    "docsqa-116": r"timeout-graceful-shutdown[^\n]*Default",
}

FIELDS = ["id", "question", "answers", "doc", "answerable", "answer_in_local", "answer_in_web", "split"]


def norm_ws(s):
    return re.sub(r"\s+", " ", s)


def strip_md(s):
    return norm_ws(s.replace("`", "").replace("*", ""))


def span_re(span):
    return re.compile(r"(?<!\w)" + re.escape(norm_ws(span.strip())) + r"(?!\w)", re.I)


def expected_splits(rows):
    """Stratified hash split (same rule as make_questions.py): strata = answerable /
    unanswerable-in-web / unanswerable-nowhere; within a stratum order by sha256(id)
    hex digest, first ceil(n/2) -> diagnosis, rest -> heldout."""
    out = {}
    for st in ("answerable", "web", "none"):
        ids = sorted(
            (
                r["id"]
                for r in rows
                if ("answerable" if r["answerable"] else ("web" if r["answer_in_web"] else "none")) == st
            ),
            key=lambda i: hashlib.sha256(i.encode()).hexdigest(),
        )
        for k, i in enumerate(ids):
            out[i] = "diagnosis" if k < (len(ids) + 1) // 2 else "heldout"
    return out


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
    want = expected_splits(rows)
    for r in rows:
        missing = [f for f in FIELDS if f not in r]
        if missing:
            fails.append(f"{r.get('id')}: missing fields {missing}")
        if r.get("split") != want[r["id"]]:
            fails.append(f"{r['id']}: split {r.get('split')} != hash rule {want[r['id']]}")

    # split files
    if load("questions.dev.jsonl") != rows:
        fails.append("questions.dev.jsonl differs from questions.jsonl")
    for sp in ("diagnosis", "heldout"):
        if load(f"questions.{sp}.jsonl") != [r for r in rows if r["split"] == sp]:
            fails.append(f"questions.{sp}.jsonl does not match the {sp} rows of questions.jsonl")

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
                p = WEB.get(qid)
                if not p:
                    fails.append(f"{qid}: answer_in_web=true but no WEB evidence recorded")
                elif not re.search(p, web_joined, re.I):
                    fails.append(f"{qid}: WEB evidence /{p}/ not in web.jsonl")
            else:
                if qid in WEB:
                    fails.append(f"{qid}: WEB evidence recorded but answer_in_web=false")
                p = WEB_ABSENT.get(qid)
                if p and re.search(p, web_joined, re.I):
                    fails.append(f"{qid}: /{p}/ found in web.jsonl although answer_in_web=false")

    n_ans = sum(r["answerable"] for r in rows)
    n_un = len(rows) - n_ans
    if n_ans < 64:
        fails.append(f"only {n_ans} answerable (< 64)")
    if n_un < 20:
        fails.append(f"only {n_un} unanswerable (< 20)")
    if len(per_file) < 15:
        fails.append(f"answerable questions cover only {len(per_file)} files (< 15)")
    for f, c in per_file.items():
        if c > 8:
            fails.append(f"{f} has {c} questions (> 8)")

    # summary
    print(f"docs: {len(docs)} files, {sum(len(t.split()) for t in docs.values())} words")
    print(f"web:  {len(web_rows)} rows, {len({r['title'] for r in web_rows})} pages")
    print(
        f"questions: {len(rows)} ({n_ans} answerable, {n_un} unanswerable, "
        f"{sum(1 for r in rows if r['answer_in_web'])} unanswerable-but-in-web)"
    )
    print(f"{'split':<10} {'answerable':>10} {'unanswerable':>12} {'in_web':>7} {'total':>6}")
    for sp in ("diagnosis", "heldout"):
        rs = [r for r in rows if r["split"] == sp]
        a = sum(r["answerable"] for r in rs)
        w = sum(r["answer_in_web"] for r in rs)
        print(f"{sp:<10} {a:>10} {len(rs) - a:>12} {w:>7} {len(rs):>6}")
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
