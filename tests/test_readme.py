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
    helps = "".join(
        CliRunner().invoke(app, [c, "--help-all"], terminal_width=200, env={"COLUMNS": "250"}).output
        for c in ("index", "evaluate", "ask", "batch", "calibrate", "evaluator-test", "train-evaluator")
    )
    helps += (ROOT / "benchmarks" / "popqa.py").read_text()  # the benchmark's own flags (--sample, ...)
    helps += (ROOT / "benchmarks" / "split_popqa.py").read_text()
    missing = [f for f in flags if f not in helps and f not in ("--config", "--version")]
    assert not missing


def test_settings_table_in_docs_is_the_one_made_from_the_declarations():
    from crag_cli.settings.info import field_names, markdown_table

    text = (ROOT / "docs" / "commands.md").read_text()
    table = text.split("<!-- settings table: made by crag_cli.settings.info.markdown_table() -->\n", 1)[1]
    table = table.split("<!-- end of settings table -->", 1)[0]
    assert table == markdown_table(), "paste crag_cli.settings.info.markdown_table() into docs/commands.md"
    assert all(f"`{name}`" in table for name in field_names())


def test_every_setting_has_an_option_on_ask_and_batch():
    from crag_cli.settings.info import field_names, option_decls

    for command in ("ask", "batch"):
        help_text = CliRunner().invoke(app, [command, "--help-all"], terminal_width=250).output
        for name in field_names():
            assert option_decls(name)[-1].split("/")[0] in help_text, (command, name)


def test_readme_is_a_guide_that_links_every_page_of_docs():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 300
    assert "## Set-up" in "\n".join(text.splitlines()[:40])  # the quick start comes first
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md)", text))
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert linked == pages
    for page in (ROOT / "docs").glob("*.md"):  # links between the pages and back to README resolve
        for target in re.findall(r"\]\(([\w./-]+\.md)(?:#[\w-]+)?\)", page.read_text()):
            assert (page.parent / target).resolve().is_file(), (page.name, target)


def _first_screen_problems(text):
    """What README's first 50 lines lack: the sentence, the bullets, the two set-up commands, a transcript."""
    screen = "\n".join(text.splitlines()[:50])
    setup = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    problems = [] if screen.startswith("# crag") and "crag answers questions" in screen else ["the sentence"]
    if sum(line.startswith("- ") for line in screen.splitlines()) < 3:
        problems.append("the bullets")
    commands = re.findall(r"```bash\n(.*?)\n```", setup, re.S)
    if len(commands) != 2 or not all(f"```bash\n{c}\n```" in screen for c in commands):
        problems.append("the two commands")
    if not any("action:" in t and "source [1]" in t for t in re.findall(r"```text\n(.*?)\n```", screen, re.S)):
        problems.append("a transcript")
    return problems


def _how_well_problems(text):
    """'How well it works': at most 15 non-blank lines, a row per domain, web off and on, no commit id."""
    section = text.split("## How well it works\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.strip()]
    problems = [f"{len(lines)} non-blank lines"] if len(lines) > 15 else []
    commits = [w for w in re.findall(r"\b[0-9a-f]{7,40}\b", section) if re.search("[a-f]", w) and re.search("[0-9]", w)]
    problems += [f"commit {c}" for c in commits]
    rows = [line for line in lines if line.startswith("| ")]
    for domain in ("docs folder", "COVID-QA", "PopQA"):
        for web in ("web off", "web on"):
            if not any(domain in row and web in row for row in rows):
                problems.append(f"no row for {domain}, {web}")
    return problems


def test_readme_first_screen_holds_the_sentence_the_bullets_the_two_commands_and_a_transcript():
    assert _first_screen_problems((ROOT / "README.md").read_text()) == []
    assert _first_screen_problems("# crag\n\n## Set-up\n\n```bash\nx\n```\n") == [
        "the sentence",
        "the bullets",
        "the two commands",
        "a transcript",
    ]


def test_how_well_it_works_is_a_short_table_a_row_a_domain_and_no_commit_ids():
    assert _how_well_problems((ROOT / "README.md").read_text()) == []
    long = "## How well it works\n" + "| docs folder, web off | 1 |\n" * 16 + "at 12a2e2b\n## Next\n"
    assert "17 non-blank lines" in _how_well_problems(long) and "commit 12a2e2b" in _how_well_problems(long)
    assert "no row for PopQA, web on" in _how_well_problems(long)
