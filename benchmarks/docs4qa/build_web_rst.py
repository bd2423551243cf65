"""Build web.jsonl (the stand-in "web") from the reStructuredText docs of a project: python-trio/trio's for docs4qa.

Standard library only. The reStructuredText counterpart of ../docsqa/build_web.py (which reads Markdown
only), with the same rules. Reads the docs straight from a bare git mirror:

    python build_web_rst.py /path/to/trio.git COMMIT --prefix trio --out web.jsonl

Row ids are ``PREFIX-<file>-<n>`` (path under the docs folder, subfolders joined with ``__``, no suffix).
Title: the first section heading of the file (a line underlined with = - ~ ^ ...), else its path.

One row per paragraph (blank-line separated; a literal block - the indented block after a line ending
in ``::`` or after a ``.. code-block::`` directive - counts as one paragraph, blank lines included).
A heading-only paragraph, or a directive line alone (``.. note::``), is glued in front of the paragraph
that follows it; the indented body of a directive other than a code one is read as ordinary paragraphs. Code blocks shorter than
5 words, comments and labels (``.. _name:``), and paragraphs without letters or digits after stripping
are skipped. reStructuredText is stripped lightly (roles -> their text, ``literals``, links -> link
text, emphasis, list markers, directive markers: ``.. note::`` -> ``note:``).
"""

import argparse
import json
import re
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
UNDERLINE = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}\s*$")
CODE_DIRECTIVE = re.compile(r"^\s*\.\.\s+(code-block|code|sourcecode|literalinclude|doctest)::")


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True, capture_output=True, text=True).stdout


def indent_of(line):
    return len(line) - len(line.lstrip())


def paragraphs(text):
    """Yield (kind, lines): kind is "text", "heading" or "code"."""
    lines = text.splitlines()
    paras, cur, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            if cur:
                paras.append(("text", cur))
                cur = []
            i += 1
            continue
        # section heading: text line followed by an underline (optionally with an overline before it)
        if i + 1 < len(lines) and UNDERLINE.match(lines[i + 1]) and not UNDERLINE.match(line) and not cur:
            paras.append(("heading", [line]))
            i += 2
            continue
        if UNDERLINE.match(line) and not cur:  # overline or stray rule
            i += 1
            continue
        directive = re.match(r"^\s*\.\.\s+[\w:-]+::", line)
        starts_code = bool(CODE_DIRECTIVE.match(line)) or (line.rstrip().endswith("::") and not directive)
        cur.append(line)
        i += 1
        if starts_code:
            base = indent_of(line)
            # directive options (":linenos:") directly below a code directive
            while i < len(lines) and lines[i].strip().startswith(":") and indent_of(lines[i]) > base:
                i += 1
            j = i
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and indent_of(lines[j]) > base:
                if CODE_DIRECTIVE.match(line):
                    cur.pop()
                if cur:
                    paras.append(("text", cur))
                cur = []
                block = []
                i = j
                while i < len(lines) and (not lines[i].strip() or indent_of(lines[i]) > base):
                    block.append(lines[i])
                    i += 1
                while block and not block[-1].strip():
                    block.pop()
                paras.append(("code", block))
    if cur:
        paras.append(("text", cur))
    return paras


def strip_rst(s):
    s = re.sub(r":[\w:.+-]+:`([^`<]*?)\s*<[^`>]*>`", r"\1", s)  # :ref:`text <target>`
    s = re.sub(r":[\w:.+-]+:`~?([^`]*)`", r"\1", s)  # :func:`~x.y` -> x.y
    s = re.sub(r"`([^`<]+?)\s*<[^`>]*>`__?", r"\1", s)  # `text <url>`_
    s = re.sub(r"``([^`]+)``", r"\1", s)
    s = re.sub(r"`([^`]+)`_{0,2}", r"\1", s)
    s = re.sub(r"\*\*([^*]+)\*\*", r"\1", s)
    s = re.sub(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])", r"\1", s)
    s = re.sub(r"^\s*\.\.\s+([\w:-]+)::\s*", r"\1: ", s, flags=re.M)  # .. note:: -> note:
    s = re.sub(r"^\s*(?:[-*+]|\d+\.|#\.)\s+", "", s, flags=re.M)
    s = re.sub(r"^\s*:([\w -]+):\s*", r"\1: ", s, flags=re.M)  # field lists / directive options
    s = s.replace("\\", "")
    return "\n".join(ln.strip() for ln in s.splitlines() if ln.strip()).strip()


def is_comment(lines):
    first = lines[0].strip()
    return first.startswith("..") and not re.match(r"^\.\.\s+[\w:-]+::", first)


def title_of(paras, name):
    for kind, lines in paras:
        if kind == "heading":
            return strip_rst(lines[0]).strip()
    return name


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gitdir")
    parser.add_argument("rev", nargs="?", default="HEAD")
    parser.add_argument("--prefix", default="trio", help="row ids are PREFIX-<file>-<n>")
    parser.add_argument("--docs", default="docs/source", help="docs folder in the repository")
    parser.add_argument("--out", type=Path, default=HERE / "web.jsonl")
    args = parser.parse_args()
    gitdir, rev, prefix, root = args.gitdir, args.rev, args.prefix, args.docs.rstrip("/") + "/"
    files = [f for f in git(gitdir, "ls-tree", "-r", "--name-only", rev, root).split() if f.endswith(".rst")]
    rows = []
    for f in sorted(files):
        rel = f[len(root) :]
        stem = rel[: -len(".rst")].replace("/", "__")
        paras = paragraphs(git(gitdir, "show", f"{rev}:{f}"))
        title = title_of(paras, rel)
        n, pending = 0, ""
        for kind, lines in paras:
            if kind == "code":
                body = "\n".join(lines)
                if len(body.split()) < 5:
                    continue
                body = body.strip("\n")
                indent = min(indent_of(ln) for ln in lines if ln.strip())
                body = "\n".join(ln[indent:] for ln in body.splitlines())
            else:
                if is_comment(lines):
                    continue
                body = strip_rst("\n".join(lines))
                if not re.search(r"[A-Za-z0-9]", body):
                    continue
                if kind == "heading" or re.match(r"^\s*\.\.\s+[\w:-]+::\s*$", "\n".join(lines)):
                    pending = (pending + " " + body).strip() if pending else body
                    continue
            if pending:
                body = pending + "\n" + body
                pending = ""
            n += 1
            rows.append({"id": f"{prefix}-{stem}-{n}", "title": title, "text": body})
        if pending:
            n += 1
            rows.append({"id": f"{prefix}-{stem}-{n}", "title": title, "text": pending})
    with open(args.out, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    titles = {}
    for r in rows:
        titles[r["title"]] = titles.get(r["title"], 0) + 1
    print(f"{len(rows)} rows, {len(titles)} pages -> {args.out}")
    for t, c in titles.items():
        print(f"  {c:4d}  {t}")


if __name__ == "__main__":
    main()
