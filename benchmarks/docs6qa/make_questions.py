"""Write questions*.jsonl from the hand-written question list below.

Standard library only. Modelled on benchmarks/docs5qa/make_questions.py. The questions were
written by hand for this project over the structlog docs folder (paraphrased, not copied from the
docs); check_questions.py verifies them.

Split: by a seeded shuffle. Rows are numbered in the order below (answerable first, grouped by
doc file, then unanswerable, the web-answered ones first). Within each stratum (answerable /
unanswerable but answered by the web / unanswerable everywhere) the row indices are shuffled by
``random.Random(SEED)`` (one generator, strata in that order) and the first DIAGNOSIS[stratum]
of them go to "diagnosis", the rest to "heldout": 24 + 2 + 6 = 32 diagnosis rows, 36 + 3 + 9 = 48
held out. Writes questions.jsonl (all rows), questions.diagnosis.jsonl, questions.heldout.jsonl
and questions.dev.jsonl (= the diagnosis rows, the default file name read by a tool).
"""

import sys
from pathlib import Path

sys.dont_write_bytecode = True  # write nothing outside this folder
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import docs_questions as dq  # noqa: E402

HERE = Path(__file__).resolve().parent
PREFIX = "docs6qa"
SEED = 20261130
# rows of each stratum that go to the diagnosis split
DIAGNOSIS = {"answerable": 24, "web": 2, "none": 6}

# (doc file in docs/, question, [answer spans])
ANSWERABLE = [
    # why.md
    (
        "why.md",
        "Apart from JSON, which other easy-to-parse output format is listed among structlog's built-in formatters?",
        ["logfmt", "LogfmtRenderer", "structlog.processors.LogfmtRenderer"],
    ),
    (
        "why.md",
        "Whose words are quoted at the top of the page that argues for structured logging?",
        ["Paul Querna"],
    ),
    # getting-started.md
    (
        "getting-started.md",
        "What exact command do the docs give for installing structlog from PyPI?",
        ["python -m pip install structlog"],
    ),
    (
        "getting-started.md",
        "With the default setup, which built-in function turns values of arbitrary types into text for the console?",
        ["repr"],
    ),
    (
        "getting-started.md",
        "From a coroutine, which method do I await to emit an info-level entry without blocking the event loop?",
        ["ainfo", "logger.ainfo"],
    ),
    (
        "getting-started.md",
        "To keep them short, most later examples in the docs use which renderer instead of the colorful default one?",
        ["KeyValueRenderer", "structlog.processors.KeyValueRenderer", "KeyValueRenderer()"],
    ),
    # bound-loggers.md
    (
        "bound-loggers.md",
        "How can I inspect which key-value pairs are currently attached to a logger object?",
        ["structlog.get_context()", "get_context", "structlog.get_context", "get_context()"],
    ),
    (
        "bound-loggers.md",
        "The protocol describing bindable loggers is decorated with what, so that I can check objects against it "
        "with isinstance?",
        ["typing.runtime_checkable", "runtime_checkable"],
    ),
    (
        "bound-loggers.md",
        "Which well-known project is given as the example where you don't control how you obtain the logger "
        "and therefore wrap it by hand?",
        ["Celery"],
    ),
    (
        "bound-loggers.md",
        "Instead of a string, what can the final processor return so that its parts are splatted into the wrapped "
        "logger's method as positional and keyword arguments?",
        ["(args, kwargs)"],
    ),
    # configuration.md
    (
        "configuration.md",
        "In test teardown, which function puts structlog's global settings back to the out-of-the-box values?",
        ["structlog.reset_defaults", "reset_defaults"],
    ),
    (
        "configuration.md",
        "Is there a function that tells me whether configure() has already been called, and what is it?",
        ["structlog.is_configured", "is_configured", "is_configured()"],
    ),
    (
        "configuration.md",
        "Since binding at module level is discouraged, which get_logger parameter gives a logger some context "
        "right from the start?",
        ["initial_values"],
    ),
    (
        "configuration.md",
        "When get_logger runs at import time before anything is configured, what kind of object do I really get back?",
        ["lazy proxy"],
    ),
    # console-output.md
    (
        "console-output.md",
        "Which environment variable makes structlog emit colors even when the output isn't a terminal?",
        ["FORCE_COLOR"],
    ),
    (
        "console-output.md",
        "I want every kind of styling gone, bold and italics included; which environment variable does that?",
        ["NO_COLOR"],
    ),
    (
        "console-output.md",
        "How do I get hold of the console renderer instance that is in use right now so I can change its properties?",
        ["ConsoleRenderer.get_active()", "ConsoleRenderer.get_active", "get_active", "get_active()"],
    ),
    (
        "console-output.md",
        "Which ConsoleRenderer argument changes the colors used for the individual log levels?",
        ["level_styles"],
    ),
    # contextvars.md
    (
        "contextvars.md",
        "At the start of each request, which function should I call to wipe the context-local data left over "
        "from earlier?",
        ["clear_contextvars", "structlog.contextvars.clear_contextvars", "clear_contextvars()"],
    ),
    (
        "contextvars.md",
        "A helper overrides a context variable for a moment; which function takes the returned tokens and puts "
        "the old values back?",
        ["reset_contextvars", "structlog.contextvars.reset_contextvars"],
    ),
    (
        "contextvars.md",
        "What can I use as a with-block or a decorator to bind context variables for a limited scope only?",
        ["bound_contextvars", "structlog.contextvars.bound_contextvars"],
    ),
    (
        "contextvars.md",
        "Which framework (FastAPI included) is named as a mixed sync/async case where values set in synchronous "
        "code don't show up in logs from async code?",
        ["Starlette"],
    ),
    # exceptions.md
    (
        "exceptions.md",
        "What do the docs recommend for crash reporting in production rather than relying on log output?",
        ["Sentry"],
    ),
    (
        "exceptions.md",
        "In which release was support for better-exceptions deprecated?",
        ["26.1.0"],
    ),
    (
        "exceptions.md",
        "Which processor turns an exception into structured data that can be serialized to JSON?",
        ["dict_tracebacks", "structlog.processors.dict_tracebacks"],
    ),
    # frameworks.md
    (
        "frameworks.md",
        "Inside Celery tasks, which helper should I obtain my logger from so that output doesn't interleave?",
        ["get_task_logger", "get_task_logger()", "celery.utils.log.get_task_logger()"],
    ),
    (
        "frameworks.md",
        "Which third-party package do the docs send Django users to?",
        ["django-structlog"],
    ),
    (
        "frameworks.md",
        "Which Celery signal does the example hook to put the task id and name into context variables?",
        ["task_prerun", "signals.task_prerun"],
    ),
    # glossary.md
    (
        "glossary.md",
        "What term do the docs use for the fast loggers made by make_filtering_bound_logger that bypass the "
        "standard library?",
        ["Native Loggers"],
    ),
    (
        "glossary.md",
        "What is the glossary's name for the underlying logger that actually does the output?",
        ["Wrapped Logger"],
    ),
    # index.md
    (
        "index.md",
        "Under which section of the docs' table of contents is the legacy thread-local chapter filed?",
        ["Deprecated Features", "Deprecated features"],
    ),
    # license.md
    (
        "license.md",
        "Besides MIT, under which licence may I use structlog?",
        ["Apache License, Version 2", "Apache License", "Apache-2.0", "Apache"],
    ),
    # logging-best-practices.md
    (
        "logging-best-practices.md",
        "What does Stripe call the practice of emitting one information-rich entry per request?",
        ["Canonical Log Lines"],
    ),
    (
        "logging-best-practices.md",
        "Which Elastic tool is mentioned for forwarding log files from the machines to Logstash?",
        ["Filebeat"],
    ),
    (
        "logging-best-practices.md",
        "What is the short name of Graylog's format for structured log data?",
        ["GELF"],
    ),
    # performance.md
    (
        "performance.md",
        "My JSON serializer returns bytes; which logger factory saves the extra encoding round trip?",
        ["BytesLoggerFactory", "structlog.BytesLoggerFactory"],
    ),
    (
        "performance.md",
        "Once logger caching on first use is on, why can't I pass loggers to other processes with multiprocessing?",
        ["not pickleable"],
    ),
    (
        "performance.md",
        "Apart from orjson and msgspec, which other fast JSON library is suggested as JSONRenderer's serializer?",
        ["RapidJSON", "python-rapidjson"],
    ),
    # processors.md
    (
        "processors.md",
        "Which exception should a processor raise to throw a log entry away without a trace?",
        ["DropEvent", "structlog.DropEvent"],
    ),
    (
        "processors.md",
        "How many positional arguments does structlog call each processor with?",
        ["three", "three positional arguments"],
    ),
    (
        "processors.md",
        "Starting with which version may the final processor hand back a dict?",
        ["14.0.0"],
    ),
    # recipes.md
    (
        "recipes.md",
        "Which built-in processor lets me log the message under msg instead of the usual key?",
        ["EventRenamer", "structlog.processors.EventRenamer"],
    ),
    (
        "recipes.md",
        "Which processor records details such as the calling function's name, so that I can filter by where a log "
        "call came from?",
        ["CallsiteParameterAdder", "structlog.processors.CallsiteParameterAdder"],
    ),
    (
        "recipes.md",
        "To write my own wrapper class, which base class takes care of the binding work for me?",
        ["BoundLoggerBase", "structlog.BoundLoggerBase"],
    ),
    (
        "recipes.md",
        "What setting keeps local variables out of dictionary tracebacks?",
        ["show_locals=False", "show_locals"],
    ),
    # standard-library.md
    (
        "standard-library.md",
        "The stdlib processor that records the numeric log level puts it under which key?",
        ["level_number"],
    ),
    (
        "standard-library.md",
        "Which processor copies what was passed in the stdlib extra parameter into the event dictionary?",
        ["ExtraAdder", "structlog.stdlib.ExtraAdder", "ExtraAdder()"],
    ),
    (
        "standard-library.md",
        "For ProcessorFormatter, which argument lists the processors that run only on records that did not "
        "come from structlog?",
        ["foreign_pre_chain"],
    ),
    (
        "standard-library.md",
        "Which helper strips the _record and _from_structlog entries before the final rendering?",
        ["ProcessorFormatter.remove_processors_meta", "remove_processors_meta"],
    ),
    (
        "standard-library.md",
        "structlog and a logging.StreamHandler share stdout and lines get mixed up; which logger class should "
        "structlog use instead of PrintLogger?",
        ["WriteLogger", "structlog.WriteLogger"],
    ),
    # testing.md
    (
        "testing.md",
        "Which context manager collects the entries logged inside it so my tests can assert on them?",
        ["capture_logs", "structlog.testing.capture_logs", "capture_logs()"],
    ),
    (
        "testing.md",
        "Which logger simply hands back whatever it was given, handy in unit tests?",
        ["ReturnLogger", "structlog.testing.ReturnLogger"],
    ),
    # thread-local.md
    (
        "thread-local.md",
        "As of which release is the structlog.threadlocal module deprecated?",
        ["22.1.0"],
    ),
    (
        "thread-local.md",
        "In the old thread-local API, what detaches a logger from the thread-local data?",
        ["as_immutable", "structlog.threadlocal.as_immutable"],
    ),
    (
        "thread-local.md",
        "Thread-local contexts misbehave with os.fork; which multiprocessing start method avoids that?",
        ["spawn"],
    ),
    # twisted.md
    (
        "twisted.md",
        "For Twisted code in camelCase style, what is the alias of get_logger called?",
        ["structlog.getLogger", "getLogger"],
    ),
    (
        "twisted.md",
        "What value do I give twistd's --logger option to get pure JSON lines on standard out?",
        ["structlog.twisted.plainJSONStdOutLogger", "plainJSONStdOutLogger"],
    ),
    (
        "twisted.md",
        "Which of Twisted's logging systems is the one structlog supports?",
        ["twisted.python.log"],
    ),
    # typing.md
    (
        "typing.md",
        "Since which version does structlog ship type hints for all of its APIs?",
        ["20.2.0"],
    ),
    (
        "typing.md",
        "What return type is structlog.get_logger() annotated with?",
        ["typing.Any", "Any"],
    ),
]

# (question, answer_in_web): the folder does not answer these; the web-answered ones first
UNANSWERABLE = [
    (
        "The structlog docs import JsonFormatter from pythonjsonlogger.jsonlogger; in which module does that "
        "formatter live in current python-json-logger releases?",
        True,
    ),
    (
        "When python-json-logger formats the third-party stdlib records of a structlog setup, which formatter "
        "argument renames a field such as levelname?",
        True,
    ),
    (
        "If I use python-json-logger for the foreign stdlib records next to structlog, which of its formatter "
        "classes encodes with orjson?",
        True,
    ),
    (
        "Which python-json-logger formatter argument attaches constant fields, like a service name, to every "
        "stdlib record that I log alongside structlog?",
        True,
    ),
    (
        "How do I make python-json-logger's formatter output every LogRecord attribute when it handles the "
        "stdlib side of a structlog setup?",
        True,
    ),
    ("What is the oldest Python version that the current structlog release supports?", False),
    ("Does structlog ship a logger that writes straight to the systemd journal (journald)?", False),
    ("In which structlog release was support for Python 2 dropped?", False),
    ("Which third-party package integrates structlog with Sentry?", False),
    ("How do I send structlog's output through loguru?", False),
    ("How many characters wide does ConsoleRenderer pad the event text by default?", False),
    ("By default, how many stack frames at most does ExceptionDictTransformer keep?", False),
    ("How does LogfmtRenderer render a True boolean value by default?", False),
    ("Can structlog load its configuration from a YAML or TOML file?", False),
    ("How many worker threads does the executor behind the async log methods use?", False),
    ("How do I make structlog's JSON output use the severity field that Google Cloud Logging expects?", False),
    ("What is the recommended way to ship structlog logs to Datadog?", False),
    ("Does structlog work with logging.LoggerAdapter subclasses?", False),
    ("Which environment variable sets structlog's minimum log level?", False),
    ("Does structlog capture Python warnings (logging.captureWarnings) and run them through its processors?", False),
]


if __name__ == "__main__":
    dq.write_seeded(HERE, PREFIX, ANSWERABLE, UNANSWERABLE, SEED, DIAGNOSIS)
