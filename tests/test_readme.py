"""README's commands are the ones CI runs and the ones the code accepts."""

import re
from pathlib import Path

from typer.testing import CliRunner

from crag_cli.cli import app

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    setup = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", setup, re.S)


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_second():
    commands = _readme_commands()
    assert len(commands) == 2
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci.splitlines()


def test_readme_main_command_uses_existing_options():
    main = _readme_commands()[0]
    assert "crag index sample_corpus" in main and "crag ask" in main
    assert CliRunner().invoke(app, ["index", "--help"]).exit_code == 0
    flags = set(re.findall(r"`(--[a-z-]+)", (ROOT / "README.md").read_text()))
    helps = "".join(CliRunner().invoke(app, [c, "--help"], terminal_width=200).output
                    for c in ("index", "evaluate", "ask", "batch", "calibrate"))
    missing = [f for f in flags if f not in helps and f not in ("--config", "--version")]
    assert not missing
