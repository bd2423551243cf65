"""Verify the docs4qa question set (AnyIO docs; diagnosis + held-out splits). Standard library only.

Modelled on benchmarks/docs3qa/check_questions.py.

    python check_questions.py            # exits 1 if any hard check fails

Hard checks (FAIL):
  * ids are docs4qa-001 ... in order and unique, fields present;
  * split: the row at 0-based index i is "diagnosis" when i % 3 == 0, else
    "heldout"; questions.diagnosis.jsonl / questions.heldout.jsonl hold exactly
    the rows of each split, questions.dev.jsonl == questions.diagnosis.jsonl;
    each split holds both answerable and unanswerable rows;
  * every answerable answer span occurs whole-word, case-insensitively in its doc
    file (whitespace normalised; if it only matches after stripping backticks/asterisks
    this is reported as "stripped-only");
  * answer spans are 1-6 words and contain a letter or digit;
  * at least 90 answerable / 24 unanswerable / 4 answer_in_web, >= 15 files,
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

# Unanswerable questions: regexes (case-insensitive unless scoped with (?-i:...))
# that must NOT match any doc. They encode the key terms an answer would have to contain.
ABSENT = {
    "docs4qa-097": [r"strict_exception_groups", r"\bstrict\w*[ _]exception"],
    "docs4qa-098": [r"guest", r"start_guest_run", r"\bQt\b", r"host loop", r"\bGUI\b"],
    "docs4qa-099": [r"Communicating Sequential", r"\bCSP\b", r"rendezvous"],
    "docs4qa-100": [r"MockClock", r"autojump", r"\bclock\b", r"fake (clock|time)", r"virtual (clock|time)"],
    "docs4qa-101": [r"instrument", r"before_task_step", r"task_scheduled"],
    "docs4qa-102": [r"cpu_count", r"number of (CPU|processor|core)s?\b", r"\d+ (worker )?processes"],
    "docs4qa-103": [r"backlog", r"65536", r"SOMAXCONN"],
    "docs4qa-104": [r"reuse_port", r"SO_REUSE"],
    "docs4qa-105": [r"CalledProcessError", r"check\s*=", r"non-?zero", r"exit (code|status)", r"returncode"],
    "docs4qa-106": [r"max_bytes", r"65536", r"\b64 ?(KiB|KB|k)\b", r"receive\(\)[^\n]*at most"],
    "docs4qa-107": [r"utf-?8", r"encoding\s*=", r"\bcodec", r"latin-?1", r"\bascii\b"],
    "docs4qa-108": [r"max_value", r"released too many", r"over-?releas"],
    "docs4qa-109": [r"handshake_timeout", r"handshake[^\n]{0,40}(timeout|seconds)"],
    "docs4qa-110": [r"0\.0\.0\.0", r"all (network )?interfaces", r"dual[- ]stack", r"IPv6", r"in6addr_any"],
    "docs4qa-111": [r"\bcwd\b", r"working directory", r"chdir", r"current directory"],
    "docs4qa-112": [r"current_buffer_used", r"buffer_used", r"max_buffer_size", r"tasks_waiting"],
    "docs4qa-113": [r"Proactor", r"SelectorEventLoop", r"WindowsSelector"],
    "docs4qa-114": [r"NODELAY", r"Nagle"],
    "docs4qa-115": [r"cipher", r"tls_version", r"TLSAttribute\.\w", r"TLSv1"],
    "docs4qa-116": [r"(?-i:ANYIO_[A-Z])", r"environment variable", r"\benv(iron)? var", r"os\.environ"],
    "docs4qa-117": [r"trio\s*[<>=~]", r"\b0\.\d{2}\b", r"minimum (supported )?(version of )?Trio"],
    "docs4qa-118": [r"cpu_count", r"number of (CPU|processor|core)s?\b", r"\d+ (worker |sub)?interpreters"],
    "docs4qa-119": [r"open_file\([^)]*mode", r"mode\s*=\s*['\"]r['\"]", r"default (file )?mode"],
    "docs4qa-120": [r"abstract (namespace|socket|address)", r"null byte", r"\\x00", r"\\0"],
    "docs4qa-121": [r"keepalive", r"keep-alive", r"setsockopt"],
}
# Unanswerable but answered by the Trio stand-in web: regexes that must all match web.jsonl.
WEB = {
    "docs4qa-097": [r"strict_exception_groups parameter now defaults to True in trio\.run"],
    "docs4qa-098": [
        r"use a framework like Qt or PyGame that has its own event loop",
        r"trio\.lowlevel\.start_guest_run",
    ],
    "docs4qa-099": [r"open_memory_channel\(0\)", r"classic Communicating Sequential Processes model"],
    "docs4qa-100": [r"trio\.testing\.MockClock", r"calling trio\.sleep when using autojump_clock is fine"],
    "docs4qa-101": [r"trio\.abc\.Instrument\.before_task_step"],
}
# Unanswerable, not in web: regex that must NOT match web.jsonl (where web is close).
WEB_ABSENT = {
    "docs4qa-102": r"to_process|cpu_count",
    "docs4qa-103": r"65536|SOMAXCONN",
    "docs4qa-104": r"reuse_port|SO_REUSEPORT",
    "docs4qa-105": r"CalledProcessError",
    "docs4qa-106": r"max_bytes|65536",
    "docs4qa-107": r"utf-?8",
    "docs4qa-108": r"max_value",
    "docs4qa-109": r"handshake_timeout",
    "docs4qa-110": r"0\.0\.0\.0|all (network )?interfaces",
    "docs4qa-111": r"open_process[^\n]*cwd|working directory|chdir",
    "docs4qa-112": r"current_buffer_used",
    "docs4qa-113": r"Proactor|SelectorEventLoop",
    "docs4qa-114": r"NODELAY|Nagle",
    "docs4qa-115": r"\bcipher\b|tls_version",
    "docs4qa-116": r"(?-i:ANYIO_)",
    "docs4qa-117": r"anyio\[trio\]",
    "docs4qa-118": r"to_interpreter|subinterpreter",
    "docs4qa-119": r"mode\s*=\s*['\"]r['\"]",
    "docs4qa-120": r"abstract (namespace|socket|address)",
    "docs4qa-121": r"keepalive|keep-alive",
}

SPLITS = ("diagnosis", "heldout")


def split_error(i, r):
    want_split = "diagnosis" if i % 3 == 0 else "heldout"
    if r.get("split") != want_split:
        return f"{r.get('id')}: split {r.get('split')!r} != {want_split!r} (index {i})"


def main():
    fails, warns = [], []
    rows = dq.load_jsonl(HERE / "questions.jsonl")
    # docs/ holds .rst files (dq.load_sources reads *.md); web.jsonl's texts are joined one
    # row a line, whitespace normalised
    docs = {p.name: p.read_text(encoding="utf-8") for p in sorted((HERE / "docs").glob("*.rst"))}
    web_rows = dq.load_jsonl(HERE / "web.jsonl")
    web_joined = "\n".join(dq.norm_ws(r["text"]) for r in web_rows)

    # ids, fields, splits
    dq.check_rows(rows, fails, split_error, id_prefix="docs4qa")

    sources, tables = (docs, web_rows, web_joined), (ABSENT, WEB, WEB_ABSENT)
    return dq.check_and_report(HERE, rows, sources, tables, SPLITS, fails, warns, 90, 24)


if __name__ == "__main__":
    sys.exit(main())
