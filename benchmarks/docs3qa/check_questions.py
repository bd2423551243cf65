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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import docs_questions as dq  # noqa: E402

HERE = Path(__file__).resolve().parent

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

SPLITS = ("diagnosis", "heldout")


def split_error(i, r):
    want_split = "diagnosis" if i % 3 == 0 else "heldout"
    if r.get("split") != want_split:
        return f"{r.get('id')}: split {r.get('split')!r} != {want_split!r} (index {i})"


def main():
    fails, warns = [], []
    rows = dq.load_jsonl(HERE / "questions.jsonl")
    docs, web_rows, web_joined = dq.load_sources(HERE)

    # ids, fields, splits
    dq.check_rows(rows, fails, split_error, id_prefix="docs3qa")

    sources, tables = (docs, web_rows, web_joined), (ABSENT, WEB, WEB_ABSENT)
    return dq.check_and_report(HERE, rows, sources, tables, SPLITS, fails, warns, 96, 24)


if __name__ == "__main__":
    sys.exit(main())
