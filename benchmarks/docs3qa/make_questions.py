"""Write questions*.jsonl from the hand-written question list below.

Standard library only. Adapted from benchmarks/docs2qa/make_questions.py. The
questions were written by hand for this project over the Click docs folder
(paraphrased, not copied from the docs); check_questions.py verifies them.

Split: by position. Rows are numbered in the order below (answerable first,
then unanswerable); the row at 0-based index i (id docs3qa-<i+1>) is in the
"diagnosis" split when i % 3 == 0 and in "heldout" otherwise. With 96
answerable and 24 unanswerable rows this gives 32 + 8 diagnosis and 64 + 16
held-out rows. Writes questions.jsonl (all rows), questions.diagnosis.jsonl,
questions.heldout.jsonl and questions.dev.jsonl (= the diagnosis rows, the
default file name read by a tool).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import docs_questions as dq  # noqa: E402

HERE = Path(__file__).resolve().parent

# (doc file in docs/, question, [answer spans])
ANSWERABLE = [
    # quickstart.md
    (
        "quickstart.md",
        "What is Click's replacement for the built-in print that keeps working on a badly set up terminal?",
        ["echo", "click.echo"],
    ),
    (
        "quickstart.md",
        "I defined a command with the plain decorator; which group method attaches it to the group afterwards?",
        ["add_command", "group.add_command()", "Group.add_command"],
    ),
    ("quickstart.md", "Which of the sample apps shipped in the repo needs the pillow imaging library?", ["imagepipe"]),
    # advanced.md
    (
        "advanced.md",
        "Is there a built-in decorator for a --version flag, so I don't have to write the eager callback myself?",
        ["version_option", "click.version_option"],
    ),
    (
        "advanced.md",
        "Which parameter keyword keeps a parameter's value from being handed to my command function?",
        ["expose_value"],
    ),
    (
        "advanced.md",
        "In a validation callback, which exception should I raise so the error text automatically names the offending parameter?",
        ["BadParameter", "click.BadParameter"],
    ),
    (
        "advanced.md",
        "How can I make option names and choice values case-insensitive through the context settings?",
        ["token_normalize_func"],
    ),
    (
        "advanced.md",
        "In a group, how do I open a database connection that stays usable by subcommands and is closed automatically when they are done?",
        ["with_resource", "Context.with_resource"],
    ),
    # arguments.md
    ("arguments.md", "How do I let a positional argument accept any number of values?", ["nargs=-1", "-1"]),
    (
        "arguments.md",
        "If I declare an argument with neither a type nor a default, which type does Click assume?",
        ["STRING", "str"],
    ),
    (
        "arguments.md",
        "Under which heading of the help page is an argument's own help text listed?",
        ["Positional arguments"],
    ),
    # click-concepts.md
    (
        "click-concepts.md",
        "Does a Click parameter callback get the raw command-line string or the value after type conversion?",
        ["fully converted"],
    ),
    (
        "click-concepts.md",
        "If an option that doesn't accept several values is passed twice, which of the two values does Click keep?",
        ["the last", "last"],
    ),
    (
        "click-concepts.md",
        "Which older standard-library parser runs callbacks during parsing and skips them for values the user never gave?",
        ["optparse"],
    ),
    # command-line-reference.md
    (
        "command-line-reference.md",
        "In the Windows Command Prompt, how do I print the status code returned by the last program?",
        ["%ERRORLEVEL%", "ERRORLEVEL"],
    ),
    ("command-line-reference.md", "What exit status means a command finished without any error?", ["0"]),
    # commands-and-groups.md
    (
        "commands-and-groups.md",
        "How do I make a group's own function run even when the user doesn't name a subcommand?",
        ["invoke_without_command=True", "invoke_without_command"],
    ),
    (
        "commands-and-groups.md",
        "With auto_envvar_prefix set to WEB, which environment variable sets the host option of a subcommand called run-server?",
        ["WEB_RUN_SERVER_HOST"],
    ),
    (
        "commands-and-groups.md",
        "Which context method tells me whether a parameter's value came from the command line, an environment variable or a default?",
        ["get_parameter_source", "Context.get_parameter_source", "ctx.get_parameter_source"],
    ),
    # commands.md
    (
        "commands.md",
        "How can one invocation run several subcommands one after another, like `app validate build upload`?",
        ["chain=True"],
    ),
    (
        "commands.md",
        "Which group decorator registers a function that receives the return values of all the subcommands run in a chain?",
        ["result_callback", "Group.result_callback"],
    ),
    (
        "commands.md",
        "Where can I supply per-subcommand defaults, for example read from a config file, that override the ones declared in code?",
        ["default_map", "Context.default_map"],
    ),
    (
        "commands.md",
        "Which setting has to be switched off for Command.main to hand back the callback's return value instead of ignoring it?",
        ["standalone_mode"],
    ),
    # complex.md
    (
        "complex.md",
        "Which decorator gives my command just the object stored on the context rather than the context itself?",
        ["pass_obj", "click.pass_obj"],
    ),
    (
        "complex.md",
        "Which context method does make_pass_decorator use under the hood to look up the nearest object of a type?",
        ["find_object", "Context.find_object"],
    ),
    (
        "complex.md",
        "How do I make a decorator built with make_pass_decorator create the object when no outer command stored one?",
        ["ensure=True"],
    ),
    (
        "complex.md",
        "For a group that loads subcommands lazily, which Group method imports and returns a subcommand by its name?",
        ["get_command", "Group.get_command"],
    ),
    # contrib.md
    ("contrib.md", "Which third-party extension adds option groups and constraints to Click?", ["Cloup"]),
    (
        "contrib.md",
        "How many GitHub stars does a project need to be listed among the third-party extensions?",
        ["20", "at least 20"],
    ),
    # contributing.md
    (
        "contributing.md",
        "Which tox environment runs Click's tests in parallel and in shuffled order to catch tests affecting each other?",
        ["random", "tox r -e random"],
    ),
    (
        "contributing.md",
        "At what line length should Markdown files in the Click repository be wrapped?",
        ["80 characters", "80"],
    ),
    # design-opinions.md
    (
        "design-opinions.md",
        "According to Click's CLI design advice, if positional arguments are used at all, should they be optional or mandatory?",
        ["required"],
    ),
    # documentation.md
    (
        "documentation.md",
        "How do I override the one-line description of a subcommand that appears in its parent group's help?",
        ["short_help"],
    ),
    (
        "documentation.md",
        "What marker line do I put in a docstring to stop Click from reflowing that paragraph?",
        ["\\b"],
    ),
    (
        "documentation.md",
        "How can I make the automatically added help flag also answer to -h?",
        ["help_option_names"],
    ),
    # entry-points.md
    (
        "entry-points.md",
        "Which pyproject.toml table declares the console commands that get installed with my package?",
        ["project.scripts", "[project.scripts]"],
    ),
    (
        "entry-points.md",
        "Which pip flag installs my CLI project so that code changes take effect without reinstalling?",
        ["-e"],
    ),
    (
        "entry-points.md",
        "Which build backend does the sample pyproject.toml use?",
        ["flit_core", "flit_core.buildapi"],
    ),
    # exceptions.md
    (
        "exceptions.md",
        "What text does a Click program write to stderr when the user cancels it, e.g. with Ctrl-C?",
        ["Aborted!"],
    ),
    (
        "exceptions.md",
        "What exit code does a Click program return when it shows the help page because it was invoked incorrectly?",
        ["2", "exit code 2"],
    ),
    (
        "exceptions.md",
        "Which exception does Click turn KeyboardInterrupt and EOFError into?",
        ["Abort"],
    ),
    (
        "exceptions.md",
        "Which group setting makes Click print the help page when the group is run with nothing after it?",
        ["no_args_is_help"],
    ),
    # extending-click.md
    (
        "extending-click.md",
        "Which keyword do I pass to @click.group so that it builds an instance of my own Group subclass?",
        ["cls"],
    ),
    (
        "extending-click.md",
        "In the prefix-alias group example, which Group method is overridden so that the full command name is always reported?",
        ["resolve_command"],
    ),
    # faqs.md
    (
        "faqs.md",
        "How do I stop a Click app on Windows from expanding $VARS and wildcards in its arguments by itself?",
        ["windows_expand_args=False", "windows_expand_args"],
    ),
    (
        "faqs.md",
        "Which environment variable turns on Python's UTF-8 mode to avoid encoding errors when output is redirected on Windows?",
        ["PYTHONUTF8", "PYTHONUTF8=1"],
    ),
    ("faqs.md", "In which Python release does UTF-8 mode become the default?", ["3.15", "Python 3.15"]),
    # handling-files.md
    (
        "handling-files.md",
        "Which flag of click.Path makes Click check that the given path is really there?",
        ["exists", "exists=True"],
    ),
    (
        "handling-files.md",
        "Which File type keyword decides whether the file is only opened at the first read or write?",
        ["lazy"],
    ),
    (
        "handling-files.md",
        "How do I make a File parameter write into a temporary file that is moved into place only when finished?",
        ["atomic=True"],
    ),
    # index.md
    ("index.md", "What does the name Click stand for?", ["Command Line Interface Creation Kit"]),
    # license.md
    ("license.md", "Under which licence is Click distributed?", ["BSD-3-Clause"]),
    # option-decorators.md
    (
        "option-decorators.md",
        "Is there a shortcut decorator for a password prompt that hides the typing and asks twice?",
        ["password_option", "click.password_option"],
    ),
    (
        "option-decorators.md",
        "Which ready-made decorator adds a --yes flag that asks 'are you sure?' before a destructive action?",
        ["confirmation_option", "click.confirmation_option"],
    ),
    (
        "option-decorators.md",
        "If the standard version decorator can't show what I need, such as the Python version, which decorator should I use instead?",
        ["custom_version_option"],
    ),
    # options.md
    (
        "options.md",
        "How do I let an option be given several times and collect every value into a tuple?",
        ["multiple=True"],
    ),
    (
        "options.md",
        "How do I count how often a flag like -v is repeated, e.g. for verbosity levels?",
        ["count=True"],
    ),
    (
        "options.md",
        "Which option keyword lets a flag pass a specific value, such as 'upper', to the function when it's given?",
        ["flag_value"],
    ),
    (
        "options.md",
        "Which ParamType method breaks an environment variable's string into several values for multi-value options?",
        ["split_envvar_value", "ParamType.split_envvar_value"],
    ),
    (
        "options.md",
        "When a flag's value is an arbitrary object such as a class, which parameter type does Click infer so the value passes through untouched?",
        ["UNPROCESSED"],
    ),
    (
        "options.md",
        "If an option is left out and has no default, what value does my function receive for it?",
        ["None"],
    ),
    # parameter-types.md
    (
        "parameter-types.md",
        "How do I let users type a Choice value in any letter case?",
        ["case_sensitive=False"],
    ),
    (
        "parameter-types.md",
        "Which IntRange option makes out-of-range numbers snap to the nearest bound instead of failing?",
        ["clamp", "clamp=True"],
    ),
    (
        "parameter-types.md",
        "Which IntRange/FloatRange arguments leave the boundary value itself out of the accepted range?",
        ["min_open", "max_open"],
    ),
    (
        "parameter-types.md",
        "Which method must a custom ParamType subclass implement to turn the input string into the right type?",
        ["convert", "ParamType.convert"],
    ),
    # parameters.md
    ("parameters.md", "How many values does an option take by default?", ["1"]),
    # prompts.md
    (
        "prompts.md",
        "How do I make an option prompt only when its flag is given without a value, instead of whenever it's missing?",
        ["prompt_required=False"],
    ),
    (
        "prompts.md",
        "Which argument to click.confirm makes the program stop by itself when the user answers no?",
        ["abort=True"],
    ),
    (
        "prompts.md",
        "How can a prompted option's default be computed when the program runs, e.g. from an environment variable?",
        ["a callable", "callable"],
    ),
    # shell-completion.md
    (
        "shell-completion.md",
        "What is the oldest Bash version that Click's tab completion works with?",
        ["4.4", "version 4.4"],
    ),
    (
        "shell-completion.md",
        "For zsh, what value should the program's _COMPLETE environment variable be set to so the completion script is printed?",
        ["zsh_source"],
    ),
    (
        "shell-completion.md",
        "Which function registers a ShellComplete subclass that adds support for another shell?",
        ["add_completion_class"],
    ),
    # standalone-apps.md
    (
        "standalone-apps.md",
        "Which Briefcase setting tells it the project is a terminal program rather than a GUI?",
        ["console_app", "console_app = true"],
    ),
    (
        "standalone-apps.md",
        "Which file must the package contain for Briefcase to be able to start the Click app?",
        ["__main__.py"],
    ),
    (
        "standalone-apps.md",
        "Which Briefcase command runs the app straight from the source tree while developing?",
        ["briefcase dev"],
    ),
    # support-multiple-versions.md
    (
        "support-multiple-versions.md",
        "As a library author, what should I call to find out which Click version is installed when feature detection isn't enough?",
        ["importlib.metadata.version"],
    ),
    (
        "support-multiple-versions.md",
        "In which Click release did ParamType methods start taking a ctx argument?",
        ["8.2"],
    ),
    # testing.md
    (
        "testing.md",
        "Which class from click.testing runs a command as if it were called from a shell, for use in tests?",
        ["CliRunner"],
    ),
    (
        "testing.md",
        "Which CliRunner capture mode also catches output written straight to file descriptors by C extensions or subprocesses?",
        ['capture="fd"', "fd"],
    ),
    (
        "testing.md",
        "Which pytest plugin is suggested for running CLI tests concurrently in separate worker processes?",
        ["pytest-xdist"],
    ),
    # unicode-support.md
    (
        "unicode-support.md",
        "Which locale should I export on a US machine to get rid of Click's ASCII-environment error?",
        ["en_US.utf-8"],
    ),
    ("unicode-support.md", "Which shell command lists the locales available on the system?", ["locale -a"]),
    (
        "unicode-support.md",
        "Which exception does Click raise when Python was set up to use ASCII for the environment's encoding?",
        ["RuntimeError"],
    ),
    # upgrade-guides.md
    (
        "upgrade-guides.md",
        "Which CliRunner helper is deprecated and scheduled to disappear in Click 9.0?",
        ["isolated_filesystem", "CliRunner.isolated_filesystem()"],
    ),
    (
        "upgrade-guides.md",
        "Why isn't CliRunner's temporary-directory helper thread-safe: which function that changes process-wide state does it use?",
        ["os.chdir"],
    ),
    # utils.md
    ("utils.md", "How do I keep click.echo from adding a line break at the end?", ["nl=False"]),
    ("utils.md", "How do I send click.echo output to standard error instead of stdout?", ["err=True"]),
    ("utils.md", "Which function styles and prints text in a single call?", ["secho", "click.secho"]),
    (
        "utils.md",
        "Which function gives me the right per-user configuration folder for my app on each operating system?",
        ["get_app_dir", "click.get_app_dir"],
    ),
    # virtualenv.md
    ("virtualenv.md", "Which command leaves the active virtual environment?", ["deactivate"]),
    # why.md
    (
        "why.md",
        "Which standard-library module is Click's own argument parsing modelled on?",
        ["optparse"],
    ),
    ("why.md", "Which web framework was Click originally written to serve?", ["Flask"]),
    (
        "why.md",
        "What feature does argparse lack that Click's nested parsing depends on?",
        ["disabling interspersed arguments", "interspersed arguments"],
    ),
    # wincmd.md
    (
        "wincmd.md",
        "Which internal encoding does Click use when it emulates the Windows console stream?",
        ["utf-16-le"],
    ),
    (
        "wincmd.md",
        "On Windows 7 and older, how many characters at most can be written in one binary-mode call?",
        ["64k"],
    ),
    (
        "wincmd.md",
        "Besides echo and prompt, which Click function gets the Windows console Unicode support?",
        ["get_text_stream", "click.get_text_stream"],
    ),
]

# (question, answer_in_web)
UNANSWERABLE = [
    # answered by the stand-in web (Typer docs), not by docs/
    ("Which date and time formats does Click's DateTime type accept when I don't pass my own list?", True),
    ("Which click.Path option hands my function an absolute path with symbolic links already followed?", True),
    (
        "Which click.Path argument controls what Python type the path value is converted to, and what is its default?",
        True,
    ),
    ("Which click.style keyword swaps the foreground and background colours of the text?", True),
    ("What help text does Click print next to the --help option it adds automatically?", True),
    # not answered anywhere
    ("How many characters wide is the bar drawn by click.progressbar when I don't give a width?", False),
    ("Which character does the progress bar use for the filled part, and which argument changes it?", False),
    ("What message does click.pause show when I don't give it any text?", False),
    ("Which editor does click.edit open when no editor is configured in the environment?", False),
    ("On Windows, does get_app_dir use the roaming or the local AppData folder, and can I switch?", False),
    ("What does click.prompt append after the prompt text, and which argument changes that?", False),
    ("At how many characters is a subcommand's summary cut off in its group's command list?", False),
    ("By how many spaces does Click's HelpFormatter indent each nested block by default?", False),
    ("What is the widest the first column of option names may get in Click's help output?", False),
    ("Which character set does CliRunner use by default to decode the captured output?", False),
    ("Does Click honour the NO_COLOR environment variable to turn colours off everywhere?", False),
    ("Which version_option argument tells Click which installed distribution to read the version from?", False),
    ("What is the default format string of the message printed by version_option?", False),
    ("Which Command method should I override to change how the Usage: line is built?", False),
    ("Can click.style take an RGB tuple or a 256-colour palette index as the foreground colour?", False),
    ("When prompting for a Choice option, which setting hides the list of allowed values from the prompt?", False),
    (
        "Which CliRunner.invoke argument lets an exception raised by the command propagate to the test instead of being stored on the result?",
        False,
    ),
    ("How many times will an option prompt ask again after invalid input before giving up?", False),
    ("Which environment variable overrides the terminal width Click uses when wrapping help text?", False),
]


def split_of(index):
    return "diagnosis" if index % 3 == 0 else "heldout"


def main():
    rows = dq.make_rows("docs3qa", ANSWERABLE, UNANSWERABLE, split_of)
    dq.write_index_splits(HERE, rows)


if __name__ == "__main__":
    main()
