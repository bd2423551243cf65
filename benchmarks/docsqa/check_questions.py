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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import docs_questions as dq  # noqa: E402

HERE = Path(__file__).resolve().parent

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


def main():
    fails, warns = [], []
    rows = dq.load_jsonl(HERE / "questions.jsonl")
    docs, web_rows, web_joined = dq.load_sources(HERE)

    want = dq.hash_splits(rows)

    def split_error(i, r):
        if r.get("split") != want[r["id"]]:
            return f"{r['id']}: split {r.get('split')} != hash rule {want[r['id']]}"

    dq.check_rows(rows, fails, split_error)

    # split files
    if dq.load_jsonl(HERE / "questions.dev.jsonl") != rows:
        fails.append("questions.dev.jsonl differs from questions.jsonl")
    for sp in ("diagnosis", "heldout"):
        if dq.load_jsonl(HERE / f"questions.{sp}.jsonl") != [r for r in rows if r["split"] == sp]:
            fails.append(f"questions.{sp}.jsonl does not match the {sp} rows of questions.jsonl")

    stripped_only, per_file = dq.check_content(rows, docs, web_joined, ABSENT, WEB, WEB_ABSENT, fails, warns)
    counts = dq.check_counts(rows, per_file, fails, min_answerable=64, min_unanswerable=20, max_per_file=8)

    # summary
    dq.print_head(docs, web_rows, rows, counts)
    print(f"{'split':<10} {'answerable':>10} {'unanswerable':>12} {'in_web':>7} {'total':>6}")
    for sp in ("diagnosis", "heldout"):
        rs = [r for r in rows if r["split"] == sp]
        a = sum(r["answerable"] for r in rs)
        w = sum(r["answer_in_web"] for r in rs)
        print(f"{sp:<10} {a:>10} {len(rs) - a:>12} {w:>7} {len(rs):>6}")
    return dq.print_tail(docs, per_file, stripped_only, warns, fails)


if __name__ == "__main__":
    sys.exit(main())
