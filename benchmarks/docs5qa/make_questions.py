"""Write questions*.jsonl from the hand-written question list below.

Standard library only. Modelled on benchmarks/docs4qa/make_questions.py. The questions were
written by hand for this project over the Black docs folder (paraphrased, not copied from the
docs); check_questions.py verifies them.

Split: by a seeded shuffle. Rows are numbered in the order below (answerable first, grouped by
doc file, then unanswerable, the web-answered ones first). Within each stratum (answerable /
unanswerable but answered by the web / unanswerable everywhere) the row indices are shuffled by
``random.Random(SEED)`` (one generator, strata in that order) and the first DIAGNOSIS[stratum]
of them go to "diagnosis", the rest to "heldout": 28 + 2 + 6 = 36 diagnosis rows, 36 + 3 + 9 = 48
held out. Writes questions.jsonl (all rows), questions.diagnosis.jsonl, questions.heldout.jsonl
and questions.dev.jsonl (= the diagnosis rows, the default file name read by a tool).
"""

import sys
from pathlib import Path

sys.dont_write_bytecode = True  # write nothing outside this folder
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import docs_questions as dq  # noqa: E402

HERE = Path(__file__).resolve().parent
PREFIX = "docs5qa"
SEED = 20261129
# rows of each stratum that go to the diagnosis split
DIAGNOSIS = {"answerable": 28, "web": 2, "none": 6}

# (doc file in docs/, question, [answer spans])
ANSWERABLE = [
    # index.md
    (
        "index.md",
        "What text do the docs use as the label of the README badge that advertises a project formatted with Black?",
        ["Code style: black"],
    ),
    # getting_started.md
    (
        "getting_started.md",
        "What is the oldest Python version that Black itself needs in order to run?",
        ["3.10", "Python 3.10+", "Python 3.10"],
    ),
    (
        "getting_started.md",
        "I'd like Black as an isolated command-line app; what is the pipx command for that?",
        ["pipx install black"],
    ),
    (
        "getting_started.md",
        "The standalone Black executables on the GitHub releases page are built with which tool?",
        ["PyInstaller"],
    ),
    # faq.md
    (
        "faq.md",
        "In which Black version was the ability to format Python 2 source removed?",
        ["22.0", "version 22.0"],
    ),
    (
        "faq.md",
        "Black crashes oddly with the compiled wheel; what should I add to pip install to skip the prebuilt wheels?",
        ["--no-binary black", "--no-binary"],
    ),
    (
        "faq.md",
        "The emoji Black prints look broken in my Windows console; which program do the docs suggest running the shell in?",
        ["Windows Terminal"],
    ),
    # guides__introducing_black_to_your_project.md
    (
        "guides__introducing_black_to_your_project.md",
        "Which Git release was the first able to skip given revisions in blame by itself?",
        ["2.23", "Git version 2.23"],
    ),
    (
        "guides__introducing_black_to_your_project.md",
        "What file name is usually used at the repository root to list the commit hashes of the mass reformatting?",
        [".git-blame-ignore-revs"],
    ),
    (
        "guides__introducing_black_to_your_project.md",
        "Which git config setting makes every blame run skip the listed reformatting commits automatically?",
        ["blame.ignoreRevsFile"],
    ),
    # guides__using_black_with_jupyter_notebooks.md
    (
        "guides__using_black_with_jupyter_notebooks.md",
        "What do I pip install so that Black can handle .ipynb files?",
        ["black[jupyter]", '"black[jupyter]"'],
    ),
    (
        "guides__using_black_with_jupyter_notebooks.md",
        "My notebooks use a home-made cell magic whose body is Python; which option lets Black know about it?",
        ["--python-cell-magics", "python-cell-magics"],
    ),
    (
        "guides__using_black_with_jupyter_notebooks.md",
        "Which option for formatting only selected lines can't be used on notebooks?",
        ["--line-ranges"],
    ),
    # guides__using_black_with_other_tools.md
    (
        "guides__using_black_with_other_tools.md",
        "With isort 5 or newer, what single setting makes its import layout agree with Black?",
        ['profile = "black"', "profile = black", "profile = 'black'"],
    ),
    (
        "guides__using_black_with_other_tools.md",
        "On an old isort without profiles, which wrap-mode setting gives the vertical hanging indent style Black expects?",
        ["multi_line_output = 3", "multi-line-output = 3"],
    ),
    (
        "guides__using_black_with_other_tools.md",
        "Which pycodestyle warning about a space before a colon in slices should I turn off when using Black?",
        ["E203"],
    ),
    (
        "guides__using_black_with_other_tools.md",
        "If I install flake8-bugbear, which of its checks should replace Flake8's own line-too-long error?",
        ["B950"],
    ),
    # integrations__doctest_formatting.md
    (
        "integrations__doctest_formatting.md",
        "Which third-party tool applies Black's style to Python snippets in .rst, .md and .tex documentation files?",
        ["blacken-docs"],
    ),
    (
        "integrations__doctest_formatting.md",
        "Which package is meant for formatting the interactive examples (>>>) inside docstrings of .py files?",
        ["blackdoc"],
    ),
    # integrations__editors.md
    (
        "integrations__editors.md",
        "In the official Vim plugin, which variable controls the maximum line width?",
        ["g:black_linelength"],
    ),
    (
        "integrations__editors.md",
        "Which JetBrains plugin talks to a locally running blackd so PyCharm formats faster?",
        ["BlackConnect"],
    ),
    (
        "integrations__editors.md",
        "From which PyCharm release on can I enable Black without any plugin?",
        ["2023.2", "PyCharm 2023.2"],
    ),
    (
        "integrations__editors.md",
        "What is the oldest Black version that Microsoft's Black Formatter extension for VS Code works with?",
        ["22.3.0"],
    ),
    # integrations__github_actions.md
    (
        "integrations__github_actions.md",
        "If I don't set any arguments, what flags does the psf/black GitHub Action pass to Black?",
        ["--check --diff", "'--check --diff'"],
    ),
    (
        "integrations__github_actions.md",
        "Which input tells the GitHub Action to take the Black version pinned in my pyproject.toml?",
        ["use_pyproject"],
    ),
    (
        "integrations__github_actions.md",
        "With which extra does the action install Black so that colour output works?",
        ["colorama"],
    ),
    # integrations__source_version_control.md
    (
        "integrations__source_version_control.md",
        "Which repository should my pre-commit config point to so the hook runs the mypyc-compiled build?",
        ["black-pre-commit-mirror", "https://github.com/psf/black-pre-commit-mirror", "psf/black-pre-commit-mirror"],
    ),
    (
        "integrations__source_version_control.md",
        "Since which release does the pre-commit hook for notebooks exist?",
        ["21.8b0"],
    ),
    (
        "integrations__source_version_control.md",
        "In which version was the option that excludes paths even when they are passed explicitly introduced?",
        ["20.8b0"],
    ),
    # usage_and_configuration__the_basics.md
    (
        "usage_and_configuration__the_basics.md",
        "In check mode, what exit status means Black ran into an internal error?",
        ["123", "code 123"],
    ),
    (
        "usage_and_configuration__the_basics.md",
        "Which environment variable controls how many processes Black uses in parallel?",
        ["BLACK_NUM_WORKERS"],
    ),
    (
        "usage_and_configuration__the_basics.md",
        "On Linux or macOS, where do I put a user-wide Black config that is used when no project config is found?",
        ["~/.config/black", "$XDG_CONFIG_HOME/black"],
    ),
    (
        "usage_and_configuration__the_basics.md",
        "If I don't pass target versions, which pyproject.toml field does Black read to work them out?",
        ["[project.requires-python]", "requires-python", "project.requires-python"],
    ),
    # usage_and_configuration__file_collection_and_discovery.md
    (
        "usage_and_configuration__file_collection_and_discovery.md",
        "Besides the Black-specific variable, which general environment variable can move Black's cache on macOS and Linux?",
        ["XDG_CACHE_HOME"],
    ),
    (
        "usage_and_configuration__file_collection_and_discovery.md",
        "I want my .gitignore still respected but also skip a folder of generated code; which option should I set?",
        ["--extend-exclude", "extend-exclude"],
    ),
    (
        "usage_and_configuration__file_collection_and_discovery.md",
        "How do I make one run of Black ignore and not update its on-disk record of already formatted files?",
        ["--no-cache"],
    ),
    # usage_and_configuration__black_as_a_server.md
    (
        "usage_and_configuration__black_as_a_server.md",
        "blackd isn't there after pip install black; what must I install to get it?",
        ["black[d]", "'black[d]'"],
    ),
    (
        "usage_and_configuration__black_as_a_server.md",
        "How large may a request body sent to blackd be unless I change the limit?",
        ["5 MiB"],
    ),
    (
        "usage_and_configuration__black_as_a_server.md",
        "Which request header do I set to tell blackd the input is a typing stub or which Python versions to target?",
        ["X-Python-Variant"],
    ),
    (
        "usage_and_configuration__black_as_a_server.md",
        "What HTTP status does blackd reply with when the code I sent needed no changes?",
        ["204", "HTTP 204"],
    ),
    # usage_and_configuration__black_docker_image.md
    (
        "usage_and_configuration__black_docker_image.md",
        "What is the name of the official Black image on Docker Hub?",
        ["pyfound/black"],
    ),
    (
        "usage_and_configuration__black_docker_image.md",
        "Which image tag follows published Black releases only, rather than every commit?",
        ["latest_release"],
    ),
    (
        "usage_and_configuration__black_docker_image.md",
        "Starting with which version does the Docker image contain a compiled Black?",
        ["23.11.0"],
    ),
    # the_black_code_style__index.md
    (
        "the_black_code_style__index.md",
        "What version constraint can I put in my requirements so Black's output won't change during 2026?",
        ["black ~= 26.0", "~= 26.0"],
    ),
    (
        "the_black_code_style__index.md",
        "Which release of a year is allowed to change how stable-style code gets formatted?",
        ["The first release", "first release"],
    ),
    # the_black_code_style__current_style.md
    (
        "the_black_code_style__current_style.md",
        "By what percentage does Black's default line length exceed the traditional 80 columns?",
        ["10%"],
    ),
    (
        "the_black_code_style__current_style.md",
        "Which syntax highlighter is the reason Black leaves capital-R raw string prefixes alone?",
        ["MagicPython"],
    ),
    (
        "the_black_code_style__current_style.md",
        "The single empty line Black enforces after a class docstring follows which PEP?",
        ["PEP 257"],
    ),
    (
        "the_black_code_style__current_style.md",
        "For which statement does adding or removing wrapping parentheses change the AST even though it behaves the same?",
        ["del"],
    ),
    # the_black_code_style__future_style.md
    (
        "the_black_code_style__future_style.md",
        "Which preview feature breaks a long iterable after `in` in a list comprehension onto its own lines?",
        ["wrap_comprehension_in"],
    ),
    (
        "the_black_code_style__future_style.md",
        "What is the unstable feature that splits over-long string literals called?",
        ["string_processing"],
    ),
    (
        "the_black_code_style__future_style.md",
        "Which unstable feature puts a lone list or dict argument's bracket right next to the call's parenthesis?",
        ["hug_parens_with_braces_and_square_brackets"],
    ),
    # contributing__index.md
    (
        "contributing__index.md",
        "When I open a bug report for Black, what should I follow to get the best results?",
        ["issue templates on GitHub", "issue templates"],
    ),
    # contributing__the_basics.md
    (
        "contributing__the_basics.md",
        "Where in the repository do the formatter's test case files go?",
        ["tests/data/cases"],
    ),
    (
        "contributing__the_basics.md",
        "In a formatting test case file, which marker line separates the input code from the expected result?",
        ["# output"],
    ),
    (
        "contributing__the_basics.md",
        "Which test-case flag should I use when testing syntax that only newer Python versions accept?",
        ["--minimum-version=", "--minimum-version"],
    ),
    # contributing__gauging_changes.md
    (
        "contributing__gauging_changes.md",
        "What tool runs two Black revisions over many open-source projects to compare the results?",
        ["diff-shades"],
    ),
    (
        "contributing__gauging_changes.md",
        "Which CI job on a pull request fails when the stable style's output changed?",
        ["assert-no-changes"],
    ),
    # contributing__issue_triage.md
    (
        "contributing__issue_triage.md",
        "Which label marks issues suitable for newcomers?",
        ["good first issue"],
    ),
    (
        "contributing__issue_triage.md",
        "Which PR label do I add to get wheels built for every platform?",
        ["ci: build all wheels"],
    ),
    (
        "contributing__issue_triage.md",
        "Which status label says a suggested enhancement is approved and a pull request is welcome?",
        ["S: accepted"],
    ),
    # contributing__release_process.md
    (
        "contributing__release_process.md",
        "What version number format do Black releases follow?",
        ["YY.M.N", "CalVer"],
    ),
    (
        "contributing__release_process.md",
        "How often do the maintainers try to ship a release of main?",
        ["every 1-2 months", "1-2 months"],
    ),
    (
        "contributing__release_process.md",
        "Which post-release job force-pushes the stable branch to the newest tag?",
        ["update-stable"],
    ),
]

# (question, answer_in_web): the folder does not answer these; the web-answered ones first
UNANSWERABLE = [
    ("Does Black reformat the Python expressions inside the curly braces of an f-string?", True),
    (
        "Starting with which major Black release are long if/else conditional expressions inside a list "
        "or a parameter annotation wrapped in their own parentheses?",
        True,
    ),
    ("If my code awaits a parenthesized list literal, does Black keep or drop those parentheses?", True),
    (
        "When deciding whether a line fits, does Black measure identifiers and comments by Unicode width "
        "or by number of characters?",
        True,
    ),
    ("Which exact YAPF comment pair does Black treat like its own fmt: off / fmt: on?", True),
    ("Which TCP port does blackd listen on when I start it without choosing one?", False),
    ("After how many seconds does blackd give up on a formatting request that takes too long?", False),
    ("How do I set up Black in Eclipse with the PyDev plugin?", False),
    ("Can Black format Cython .pyx files?", False),
    ("Which Black release first understood match statements (structural pattern matching)?", False),
    (
        "Which text encoding does Black assume for a source file that has no coding declaration at the top?",
        False,
    ),
    ("Which version was Black's first release without the beta label?", False),
    ("How old do entries in Black's cache get before they are pruned, and is there a size cap?", False),
    ("Which Unix signal should I send blackd to make it shut down gracefully?", False),
    ("Is there a JupyterLab extension that runs Black automatically when a cell is executed?", False),
    ("How can I run Black from Notepad++ on Windows?", False),
    ("Which option makes Black write a machine-readable JSON report of the files it changed?", False),
    ("What is the minimum pre-commit version required by Black's pre-commit hook?", False),
    ("Which Python base image is the official Black Docker image built on?", False),
    ("Since which Black release can it format Python 3.14 template strings (t-strings)?", False),
]


if __name__ == "__main__":
    dq.write_seeded(HERE, PREFIX, ANSWERABLE, UNANSWERABLE, SEED, DIAGNOSIS)
