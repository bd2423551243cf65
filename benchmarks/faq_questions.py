"""Users' questions: the question headings of libraries' docs (FAQs), each answered by its own section.

    python benchmarks/faq_questions.py SDIST ... --out FAQ

SDIST: an unpacked sdist no scored set uses. Writes ``FAQ/docs/`` (its docs files with a question heading, the
headings taken out, and ``--others`` more, seeded) and ``FAQ/questions.jsonl`` for ``squad_pairs.py --also``:
each heading ending in "?", its gold aliases (:func:`aliases`) those occurring once in the folder. What it gave:
docs/default-evaluator.md.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

from crag_cli.action.match import fold
from crag_cli.documents.passages import split_sentences
from crag_cli.documents.titles import ADORNMENT

SKIP = re.compile(r"change|release|history|news|whatsnew|license|authors", re.I)
ROLE = re.compile(
    r":[\w:-]+:`(~?)\.?([^`<]+?)(?:\s*<[^>]*>)?`|``([^`]+)``|`([^`<]+?)(?:\s*<[^>]*>)?`_*|\*\*?([^*]+)\*\*?"
)


def plain(title: str) -> str:
    """A heading as it reads: reStructuredText's roles, literals, links and emphasis taken out (``~a.B``: ``B``).

    >>> plain("When do I make a :class:`~orm.Session`, or ``x``?")
    'When do I make a Session, or x?'
    """

    def text(m: re.Match) -> str:
        tilde, role, *rest = m.groups()
        return role.rsplit(".", 1)[-1] if tilde else role or next(g for g in rest if g)

    return " ".join(ROLE.sub(text, title).split())


def sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``text`` without its question headings, and each one (as :func:`plain` reads) with its section's body."""
    lines = text.splitlines()
    heads = []  # (first line, line after it, title) of every heading
    for i, line in enumerate(lines):
        if re.match(r"#{1,6} \S", line):
            heads.append((i, i + 1, line.lstrip("#").strip()))
        elif i + 1 < len(lines) and line.strip() and ADORNMENT.fullmatch(lines[i + 1].strip()):
            over = i > 0 and ADORNMENT.fullmatch(lines[i - 1].strip())
            heads.append((i - 1 if over else i, i + 2, line.strip()))
    found, drop = [], set()
    for n, (start, after, title) in enumerate(heads):
        question = plain(title)
        if question.endswith("?") and len(question.split()) >= 3:
            end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
            found.append((question, "\n".join(lines[after:end]).strip()))
            drop.update(range(start, after))
    kept = [line for i, line in enumerate(lines) if i not in drop]
    return "\n".join(kept) + "\n", found


def aliases(body: str) -> list[str]:
    """The first eight words of each prose sentence of ``body`` with at least six (code and directives skipped)."""
    out = []
    for para in re.split(r"\n\s*\n", body):
        if para.startswith((" ", "\t", "..", ">>>", "```", "$")) or para.rstrip().endswith("::") and "\n" not in para:
            continue
        for sentence in split_sentences(para):
            words = sentence.split()
            if len(words) >= 6:
                out.append(" ".join(words[:8]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sdists", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--others", type=int, default=30, help="docs files without a question heading, per SDIST")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    files: dict[str, str] = {}
    questions: list[tuple[str, str, str]] = []  # (file, question, body)
    for sdist in args.sdists:
        docs = sorted(
            p
            for p in sdist.rglob("*")
            if p.suffix in (".rst", ".md", ".txt")
            and "doc" in str(p.relative_to(sdist)).lower()
            and not SKIP.search(p.name)
        )
        others = []
        for p in docs:
            name = f"{sdist.name}__{'_'.join(p.relative_to(sdist).parts)}"
            text, found = sections(p.read_text(errors="replace"))
            if found:
                files[name] = text
                questions += [(name, q, body) for q, body in found]
            else:
                others.append((name, text))
        files.update(rng.sample(others, min(args.others, len(others))))
    folded = "\n".join(fold(t) for t in files.values())
    (args.out / "docs").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.out / "docs" / name).write_text(text)
    kept = 0
    with (args.out / "questions.jsonl").open("w") as out:
        for n, (name, question, body) in enumerate(questions, 1):
            gold = [a for a in dict.fromkeys(aliases(body)) if folded.count(fold(a)) == 1]
            if gold:
                kept += 1
                out.write(
                    json.dumps({"id": f"faq-{n:04d}", "question": question, "answers": gold, "file": name}) + "\n"
                )
    print(f"{len(files)} files, {len(questions)} question headings, {kept} with an answer in the folder")


if __name__ == "__main__":
    main()
