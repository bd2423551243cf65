"""Build a domain's web.jsonl (the stand-in "web") from another project's Markdown or reStructuredText docs.

Standard library only. Reads the docs straight from a bare git mirror; the command of each domain is in its
README (``python benchmarks/data.py unpack DOMAIN``, then ``benchmarks/DOMAIN/README.md``), e.g.:

    python benchmarks/docs_web.py /path/to/uvicorn.git COMMIT --prefix uvicorn --out benchmarks/docsqa/web.jsonl
    python benchmarks/docs_web.py /path/to/trio.git COMMIT --rst --prefix trio --out benchmarks/docs4qa/web.jsonl

Row ids are ``PREFIX-<file>-<n>`` (path under the docs folder, subfolders joined with ``__``, no suffix).

Markdown (``docs/*.md``): one row per paragraph (blank-line separated; a fenced code block counts as one
paragraph). A heading-only paragraph is glued in front of the paragraph that follows it. Code blocks shorter
than 5 words, tab markers (=== "pip") and paragraphs without letters or digits after stripping (e.g. "---") are
skipped. Markdown is stripped lightly (heading/list markers, emphasis, backticks, links -> link text, HTML tags).
Title: the file's first ``# `` heading.

reStructuredText (``--rst``, ``docs/source/*.rst``), the same rules: a literal block - the indented block after
a line ending in ``::`` or after a ``.. code-block::`` directive - counts as one paragraph, blank lines
included. A heading-only paragraph, or a directive line alone (``.. note::``), is glued in front of the
paragraph that follows it; the indented body of a directive other than a code one is read as ordinary
paragraphs. Code blocks shorter than 5 words, comments and labels (``.. _name:``), and paragraphs without
letters or digits after stripping are skipped. reStructuredText is stripped lightly (roles -> their text,
``literals``, links -> link text, emphasis, list markers, directive markers: ``.. note::`` -> ``note:``).
Title: the first section heading of the file (a line underlined with = - ~ ^ ...), else its path.
"""

import argparse
import json
import re
import subprocess
from pathlib import Path

UNDERLINE = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}\s*$")
CODE_DIRECTIVE = re.compile(r"^\s*\.\.\s+(code-block|code|sourcecode|literalinclude|doctest)::")


def numbered(bodies, prefix, stem, title):
    """One row a paragraph: headings (and lone directives) glued in front of the paragraph after them."""
    rows, pending = [], ""
    for body, is_heading in bodies:
        if is_heading:
            pending = (pending + " " + body).strip() if pending else body
            continue
        if pending:
            body, pending = pending + "\n" + body, ""
        rows.append({"id": f"{prefix}-{stem}-{len(rows) + 1}", "title": title, "text": body})
    if pending:
        rows.append({"id": f"{prefix}-{stem}-{len(rows) + 1}", "title": title, "text": pending})
    return rows


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True, capture_output=True, text=True).stdout


# --------------------------------------------------------------------------- Markdown


def md_paragraphs(text):
    paras, cur, in_code = [], [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            if not in_code and cur:
                paras.append(("text", cur))
                cur = []
            cur.append(line)
            in_code = not in_code
            if not in_code:
                paras.append(("code", cur))
                cur = []
            continue
        if in_code:
            cur.append(line)
            continue
        if not line.strip():
            if cur:
                paras.append(("text", cur))
                cur = []
            continue
        cur.append(line)
    if cur:
        paras.append(("code" if in_code else "text", cur))
    return paras


def strip_md(s):
    s = re.sub(r"<style>.*?</style>", " ", s, flags=re.S)
    s = re.sub(r"<!--.*?-->", " ", s, flags=re.S)
    s = re.sub(
        r"</?(?:p|a|img|div|em|i|b|br|hr|h[1-6]|span|ul|ol|li|strong|code|pre|sup|sub|"
        r"table|thead|tbody|tr|td|th|details|summary|script|style|input|button|form|center)"
        r"\b[^>]*>",
        " ",
        s,
        flags=re.I,
    )
    s = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", s)
    s = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", s)
    s = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", s)
    s = re.sub(r"^\s{0,3}#{1,6}\s+", "", s, flags=re.M)
    s = re.sub(r"^\s*(?:[-*+]|\d+\.)\s+", "", s, flags=re.M)
    s = re.sub(r"^\s*(?:!!!|\?\?\?\+?)\s*", "", s, flags=re.M)
    s = s.replace("**", "").replace("`", "")
    s = re.sub(r"(?<!\w)_([^_\n]+)_(?!\w)", r"\1", s)
    s = re.sub(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])", r"\1", s)
    s = s.replace("&nbsp;", " ").replace("&mdash;", "-")
    return "\n".join(ln.rstrip() for ln in s.splitlines() if ln.strip()).strip()


def md_title(text, name):
    in_code = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("# "):
            return strip_md(line[2:]).strip()
    return name


def md_rows(text, rel, prefix):
    """The rows of one Markdown file (``rel``: its path under the docs folder)."""
    return numbered(md_bodies(text), prefix, rel[: -len(".md")].replace("/", "__"), md_title(text, rel))


def md_bodies(text):
    """Yield ``(text, is_heading)`` for each paragraph of a Markdown file that makes or starts a row."""
    for kind, lines in md_paragraphs(text):
        if kind == "code":
            body = "\n".join(lines[1:-1] if lines[-1].strip().startswith("```") else lines[1:])
            if len(body.split()) < 5:
                continue
            body = body.strip()
        else:
            raw = "\n".join(lines)
            body = strip_md(raw)
            body = re.sub(r'^===\s+"[^"]*"\s*$', "", body, flags=re.M).strip()
            if not re.search(r"[A-Za-z0-9]", body):
                continue
            if all(re.match(r"^\s{0,3}#{1,6}\s", ln) for ln in lines):
                yield body, True
                continue
        yield body, False


# --------------------------------------------------------------------------- reStructuredText


def indent_of(line):
    return len(line) - len(line.lstrip())


def rst_paragraphs(text):
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


def rst_title(paras, name):
    for kind, lines in paras:
        if kind == "heading":
            return strip_rst(lines[0]).strip()
    return name


def rst_rows(text, rel, prefix):
    """The rows of one reStructuredText file (``rel``: its path under the docs folder)."""
    paras = rst_paragraphs(text)
    return numbered(rst_bodies(paras), prefix, rel[: -len(".rst")].replace("/", "__"), rst_title(paras, rel))


def rst_bodies(paras):
    """Yield ``(text, is_heading)`` for each paragraph of a reStructuredText file that makes or starts a row."""
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
                yield body, True
                continue
        yield body, False


# ---------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gitdir")
    parser.add_argument("rev", nargs="?", default="HEAD")
    parser.add_argument("--prefix", required=True, help="row ids are PREFIX-<file>-<n>")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rst", action="store_true", help="reStructuredText docs (default: Markdown)")
    parser.add_argument("--docs", help="docs folder in the repository (default: docs, with --rst docs/source)")
    args = parser.parse_args(argv)
    root = (args.docs or ("docs/source" if args.rst else "docs")).rstrip("/") + "/"
    suffix, rows_of = (".rst", rst_rows) if args.rst else (".md", md_rows)
    listed = git(args.gitdir, "ls-tree", "-r", "--name-only", args.rev, root).split()
    rows = []
    for f in sorted(f for f in listed if f.endswith(suffix)):
        rows += rows_of(git(args.gitdir, "show", f"{args.rev}:{f}"), f[len(root) :], args.prefix)
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
