"""Verify the docs6qa question set (structlog docs; diagnosis + held-out splits). Standard library only.

Modelled on benchmarks/docs5qa/check_questions.py.

    python check_questions.py            # exits 1 if any hard check fails

Hard checks (FAIL):
  * ids are docs6qa-001 ... in order and unique, fields present;
  * split: each row's split is the one docs_questions.seeded_splits gives (seeded shuffle
    within the strata answerable / unanswerable-in-web / unanswerable), and the splits hold
    exactly 24 + 2 + 6 (diagnosis) and 36 + 3 + 9 (held out) rows of those strata;
    questions.diagnosis.jsonl / questions.heldout.jsonl hold exactly the rows of each split,
    questions.dev.jsonl == questions.diagnosis.jsonl; each split holds both answerable and
    unanswerable rows;
  * every answerable answer span occurs whole-word, case-insensitively in its doc
    file (whitespace normalised; if it only matches after stripping backticks/asterisks
    this is reported as "stripped-only");
  * answer spans are 1-6 words and contain a letter or digit;
  * at least 60 answerable / 20 unanswerable / 4 answer_in_web, >= 15 files,
    <= 6 questions per file (shared check), and <= 5 per file (this folder's own limit);
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
    "docs6qa-061": [r"pythonjsonlogger\.json\b", r"moved to pythonjsonlogger", r"pythonjsonlogger\.core"],
    "docs6qa-062": [r"rename_fields", r"renam\w*[^\n]{0,40}(levelname|fields?\b)"],
    "docs6qa-063": [r"OrjsonFormatter", r"pythonjsonlogger\.orjson"],
    "docs6qa-064": [r"static_fields", r"static fields"],
    "docs6qa-065": [r"reserved_attrs", r"RESERVED_ATTRS", r"all LogRecord attributes"],
    "docs6qa-066": [
        r"Python 3\.\d+",
        r"requires[- _]python",
        r"(oldest|minimum|supported) (version of )?Python",
        r"Python versions?",
    ],
    "docs6qa-067": [r"journald", r"systemd journal", r"\bjournal\b", r"JournalHandler"],
    "docs6qa-068": [
        r"Python 2 support",
        r"(drop|remov)\w*[^\n]{0,30}Python 2",
        r"Python 2[^\n]{0,30}(drop|remov|support)",
        r"(?-i:Python 2\.\d)",
    ],
    "docs6qa-069": [r"structlog[-_]sentry", r"sentry[-_ ]sdk", r"sentry[^\n]{0,40}(integration|processor|breadcrumb)"],
    "docs6qa-070": [r"loguru"],
    "docs6qa-071": [r"pad_event", r"\bpad(s|ding|ded)?\b", r"event[^\n]{0,30}width", r"\b30 characters"],
    "docs6qa-072": [r"max_frames", r"frames? (limit|maximum)", r"(maximum|max\.?|at most) [^\n]{0,20}frames"],
    "docs6qa-073": [r"bool_as_flag", r"\bbool(ean)?s?\b", r"logfmt[^\n]{0,80}(true|flag)"],
    "docs6qa-074": [
        r"yaml",
        r"config(uration)? files?",
        r"\.ini\b",
        r"toml[^\n]{0,40}(structlog|configur)",
        r"(structlog|configur)[^\n]{0,40}\btoml\b",
    ],
    "docs6qa-075": [
        r"max_workers",
        r"\d+ (worker )?threads",
        r"executor[^\n]{0,80}(\d+|threads?|workers?|size)",
    ],
    "docs6qa-076": [r"Google", r"Stackdriver", r"\bGCP\b", r"severity", r"Cloud Logging"],
    "docs6qa-077": [r"Datadog", r"\bddtrace\b"],
    "docs6qa-078": [r"LoggerAdapter", r"logging adapters?"],
    "docs6qa-079": [
        r"(?-i:LOG_LEVEL)",
        r"(?-i:STRUCTLOG_)",
        r"environment variables?[^\n]{0,80}level",
        r"level[^\n]{0,80}environment variables?",
    ],
    "docs6qa-080": [r"captureWarnings", r"warnings\.warn", r"\bwarnings module", r"py\.warnings"],
}
# Unanswerable but answered by the python-json-logger stand-in web (the JSON formatter for standard
# library records that structlog's docs point to): regexes that must all match web.jsonl.
WEB = {
    "docs6qa-061": [r"pythonjsonlogger\.jsonlogger has been moved to pythonjsonlogger\.json"],
    "docs6qa-062": [r"You can rename fields using the rename_fields argument"],
    "docs6qa-063": [r"orjson - pythonjsonlogger\.orjson\.OrjsonFormatter"],
    "docs6qa-064": [r"Static fields that are added to every log record can be set using the static_fields argument"],
    "docs6qa-065": [
        r"add them implicitly be ensuring they are not in the reserver_attrs argument",
        r"By default all LogRecord attributes are excluded",
    ],
}
# Unanswerable, not in web: regex that must NOT match web.jsonl (where web is close).
WEB_ABSENT = {
    "docs6qa-066": r"structlog|requires[- _]python",
    "docs6qa-067": r"journald|systemd|JournalHandler",
    "docs6qa-068": r"structlog[^\n]{0,60}Python 2|Python 2 support",
    "docs6qa-069": r"sentry",
    "docs6qa-070": r"loguru",
    "docs6qa-071": r"pad_event|ConsoleRenderer",
    "docs6qa-072": r"max_frames|ExceptionDictTransformer",
    "docs6qa-073": r"logfmt|bool_as_flag",
    "docs6qa-074": r"structlog[^\n]{0,80}(yaml|toml)",
    "docs6qa-075": r"max_workers|ainfo|executor",
    "docs6qa-076": r"Stackdriver|\bGCP\b|severity|Cloud Logging",
    "docs6qa-077": r"Datadog",
    "docs6qa-078": r"LoggerAdapter",
    "docs6qa-079": r"(?-i:LOG_LEVEL)|(?-i:STRUCTLOG_)",
    "docs6qa-080": r"captureWarnings|py\.warnings",
}

# rows per (split, stratum)
WANT = {
    ("diagnosis", "answerable"): 24,
    ("diagnosis", "web"): 2,
    ("diagnosis", "none"): 6,
    ("heldout", "answerable"): 36,
    ("heldout", "web"): 3,
    ("heldout", "none"): 9,
}
# this folder's own cap on answerable questions per doc file (the shared check allows 6)
MAX_PER_FILE = 5


def split(rows):
    """Row index -> split: make_questions.py's seeded shuffle, recomputed from the rows."""
    return dq.seeded_splits(rows, mq.SEED, mq.DIAGNOSIS)


if __name__ == "__main__":
    sys.exit(dq.check_seeded(HERE, "docs6qa", split, WANT, (ABSENT, WEB, WEB_ABSENT), 60, 20, MAX_PER_FILE))
