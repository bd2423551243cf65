"""Verify the docs5qa question set (Black docs; diagnosis + held-out splits). Standard library only.

Modelled on benchmarks/docs4qa/check_questions.py.

    python check_questions.py            # exits 1 if any hard check fails

Hard checks (FAIL):
  * ids are docs5qa-001 ... in order and unique, fields present;
  * split: each row's split is the one docs_questions.seeded_splits gives (seeded shuffle
    within the strata answerable / unanswerable-in-web / unanswerable), and the splits hold
    exactly 28 + 2 + 6 (diagnosis) and 36 + 3 + 9 (held out) rows of those strata;
    questions.diagnosis.jsonl / questions.heldout.jsonl hold exactly the rows of each split,
    questions.dev.jsonl == questions.diagnosis.jsonl; each split holds both answerable and
    unanswerable rows;
  * every answerable answer span occurs whole-word, case-insensitively in its doc
    file (whitespace normalised; if it only matches after stripping backticks/asterisks
    this is reported as "stripped-only");
  * answer spans are 1-6 words and contain a letter or digit;
  * at least 64 answerable / 20 unanswerable / 4 answer_in_web, >= 15 files,
    <= 6 questions per file;
  * for unanswerable questions: none of the key terms listed in ABSENT occur in
    any file of docs/; for answer_in_web == true every evidence regex in WEB
    occurs in web.jsonl; for ids in WEB_ABSENT the pattern does not occur in web.jsonl.
Soft checks (WARN): an answer span that also occurs in the question.
"""

import sys
from pathlib import Path

sys.dont_write_bytecode = True  # write nothing outside this folder
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import docs_questions as dq  # noqa: E402
import make_questions as mq  # noqa: E402

# Unanswerable questions: regexes (case-insensitive unless scoped with (?-i:...))
# that must NOT match any doc. They encode the key terms an answer would have to contain.
ABSENT = {
    "docs5qa-065": [
        r"expression parts",
        r"inside (the )?(curly )?braces",
        r"replacement fields?",
        r"f-strings?[^\n]{0,40}expressions?",
    ],
    "docs5qa-066": [r"conditional expressions?", r"ternary", r"Black 24\b"],
    "docs5qa-067": [r"awaited", r"await \(", r"await\s*\(\["],
    "docs5qa-068": [r"unicode width", r"character width", r"display width", r"east asian", r"wide characters?"],
    "docs5qa-069": [r"yapf: ?(disable|enable)"],
    "docs5qa-070": [r"45484", r"default port (is|of|=)", r"port \d{4,5} by default", r"--bind-port[^\n]{0,40}default"],
    "docs5qa-071": [
        r"request timeout",
        r"--timeout",
        r"timeout[^\n]{0,40}(request|blackd|seconds)",
        r"(request|blackd)[^\n]{0,40}timeout",
    ],
    "docs5qa-072": [r"Eclipse", r"PyDev"],
    "docs5qa-073": [r"\.pyx", r"Cython"],
    "docs5qa-074": [r"pattern matching", r"match statements?", r"PEP 63[456]", r"\bmatch\b[^\n]{0,20}\bcase\b"],
    "docs5qa-075": [
        r"coding cookie",
        r"PEP 263",
        r"encoding declaration",
        r"-\*- coding",
        r"coding[:=]",
        r"source (file )?encoding",
    ],
    "docs5qa-076": [
        r"22\.1\.0",
        r"first stable",
        r"(out of|left|leav\w+|drop\w*|remov\w+) (the )?beta",
        r"beta (label|tag|status)",
    ],
    "docs5qa-077": [r"expir", r"evict", r"prun", r"cache size", r"stale", r"(size|age) (limit|cap)"],
    "docs5qa-078": [r"SIGTERM", r"SIGINT", r"SIGHUP", r"graceful", r"shut ?down"],
    "docs5qa-079": [r"JupyterLab", r"jupyter[-_]black", r"nb_?black", r"lab extension"],
    "docs5qa-080": [r"Notepad"],
    "docs5qa-081": [
        r"--output-format",
        r"--report",
        r"machine[- ]readable",
        r"json (output|report|format)",
        r"--format[= ]json",
    ],
    "docs5qa-082": [r"minimum_pre_commit_version", r"pre-commit (>=|version \d)", r"pre-commit \d+\.\d+"],
    "docs5qa-083": [r"python:3", r"base image", r"alpine", r"slim\b", r"debian", r"FROM python"],
    "docs5qa-084": [r"t-strings?", r"template strings?", r"PEP 750"],
}
# Unanswerable but answered by the Ruff stand-in web (its pages on Black compatibility and the
# known deviations from Black): regexes that must all match web.jsonl.
WEB = {
    "docs5qa-065": [r"Ruff formats expression parts in f-strings whereas Black does not"],
    "docs5qa-066": [r"Black 24 and newer parenthesizes long conditional expressions"],
    "docs5qa-067": [r"Black preserves parentheses around awaited collections"],
    "docs5qa-068": [r"Black uses Unicode width for strings, and character width for all other tokens"],
    "docs5qa-069": [r"# yapf: disable", r"# yapf: enable"],
}
# Unanswerable, not in web: regex that must NOT match web.jsonl (where web is close).
WEB_ABSENT = {
    "docs5qa-070": r"blackd|45484",
    "docs5qa-071": r"blackd",
    "docs5qa-072": r"Eclipse|PyDev",
    "docs5qa-073": r"Cython|\.pyx\b",
    "docs5qa-074": r"pattern matching|match statement",
    "docs5qa-075": r"PEP 263|coding cookie|encoding declaration",
    "docs5qa-076": r"22\.1\.0|black[^\n]{0,40}beta",
    "docs5qa-077": r"BLACK_CACHE_DIR|black[^\n]{0,30}cache",
    "docs5qa-078": r"blackd",
    "docs5qa-079": r"jupyter[-_]black|nb_?black|jupyterlab[^\n]{0,60}black",
    "docs5qa-080": r"Notepad",
    "docs5qa-081": r"black[^\n]{0,40}json",
    "docs5qa-082": r"minimum_pre_commit_version",
    "docs5qa-083": r"pyfound/black",
    "docs5qa-084": r"black[^\n]{0,40}t-strings?|t-strings?[^\n]{0,40}black",
}

# rows per (split, stratum)
WANT = {
    ("diagnosis", "answerable"): 28,
    ("diagnosis", "web"): 2,
    ("diagnosis", "none"): 6,
    ("heldout", "answerable"): 36,
    ("heldout", "web"): 3,
    ("heldout", "none"): 9,
}


def split(rows):
    """Row index -> split: make_questions.py's seeded shuffle, recomputed from the rows."""
    return dq.seeded_splits(rows, mq.SEED, mq.DIAGNOSIS)


if __name__ == "__main__":
    sys.exit(dq.check_seeded(HERE, "docs5qa", split, WANT, (ABSENT, WEB, WEB_ABSENT), 64, 20))
