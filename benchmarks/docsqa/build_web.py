"""Build web.jsonl (the stand-in "web") from the Markdown docs of a project: encode/uvicorn's for docsqa.

Standard library only. Reads the docs straight from a bare git mirror:

    python build_web.py /path/to/uvicorn.git [commit]
    python build_web.py /path/to/httpcore.git COMMIT --prefix httpcore --out ../docs2qa/web.jsonl   # docs2qa's

Row ids are ``PREFIX-<file>-<n>``.

One row per paragraph (blank-line separated; a fenced code block counts as one
paragraph). A heading-only paragraph is glued in front of the paragraph that
follows it. Code blocks shorter than 5 words, tab markers (=== "pip") and paragraphs
without letters or digits after stripping (e.g. "---") are skipped. Markdown is stripped lightly (heading/list markers,
emphasis, backticks, links -> link text, HTML tags).
"""

import argparse
import json
import re
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True, capture_output=True, text=True).stdout


def paragraphs(text):
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


def title_of(text, name):
    in_code = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("# "):
            return strip_md(line[2:]).strip()
    return name


def main(prefix="uvicorn", out=HERE / "web.jsonl"):
    """Build web.jsonl from the command line; ``prefix`` and ``out`` are the defaults of ``--prefix`` and ``--out``
    (another folder's build_web.py passes its own)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gitdir")
    parser.add_argument("rev", nargs="?", default="HEAD")
    parser.add_argument("--prefix", default=prefix, help="row ids are PREFIX-<file>-<n>")
    parser.add_argument("--out", type=Path, default=out)
    args = parser.parse_args()
    gitdir, rev, prefix = args.gitdir, args.rev, args.prefix
    files = [f for f in git(gitdir, "ls-tree", "-r", "--name-only", rev, "docs").split() if f.endswith(".md")]
    rows = []
    for f in sorted(files):
        rel = f[len("docs/") :]
        stem = rel[:-3].replace("/", "__")
        text = git(gitdir, "show", f"{rev}:{f}")
        title = title_of(text, rel)
        n, pending = 0, ""
        for kind, lines in paragraphs(text):
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
    out = args.out
    with open(out, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    titles = {}
    for r in rows:
        titles[r["title"]] = titles.get(r["title"], 0) + 1
    print(f"{len(rows)} rows, {len(titles)} pages -> {out}")
    for t, c in titles.items():
        print(f"  {c:4d}  {t}")


if __name__ == "__main__":
    main()
