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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import docs_questions as dq  # noqa: E402

HERE = Path(__file__).resolve().parent

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


def split_error(i, r):
    if r.get("split") != "heldout":
        return f"{r.get('id')}: split {r.get('split')!r} != 'heldout' (the whole set is held out)"


def main():
    fails, warns = [], []
    rows = dq.load_jsonl(HERE / "questions.jsonl")
    docs, web_rows, web_joined = dq.load_sources(HERE)
    dq.check_rows(rows, fails, split_error)

    # split files: all three hold the same rows
    for name in ("questions.heldout.jsonl", "questions.dev.jsonl"):
        if dq.load_jsonl(HERE / name) != rows:
            fails.append(f"{name} differs from questions.jsonl")
    if (HERE / "questions.diagnosis.jsonl").exists():
        fails.append("questions.diagnosis.jsonl exists, but this set has no diagnosis part")

    stripped_only, per_file = dq.check_content(rows, docs, web_joined, ABSENT, WEB, WEB_ABSENT, fails, warns)
    counts = dq.check_counts(rows, per_file, fails, min_answerable=48, min_unanswerable=16, min_web=4, max_per_file=6)

    # summary
    dq.print_head(docs, web_rows, rows, counts, suffix="; split: all heldout")
    return dq.print_tail(docs, per_file, stripped_only, warns, fails)


if __name__ == "__main__":
    sys.exit(main())
