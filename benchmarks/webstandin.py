"""An offline stand-in for the web: serve a ``web.jsonl`` as a SearxNG-compatible search API plus HTML pages.

    python benchmarks/webstandin.py --web ../shared/bench/popqa/web.jsonl --port 8799

* ``GET /search?q=...&format=json`` answers like SearxNG's JSON API: ``{"query",
  "results": [{"url", "title", "content"}, ...]}``, ranked by BM25 (bm25s, the
  same tokenizer as crag's index) over whole pages (title + paragraphs).
* ``GET /wiki/<Title>`` serves one page per title: the paragraphs sharing that
  title as ``<p>`` elements, inside navigation and footer boilerplate that a
  main-text extractor has to remove.

Everything stays on 127.0.0.1. Not part of the crag package: the benchmark
(``benchmarks/popqa.py``) starts it; use it to try ``crag ask --web searxng``
offline.
"""

from __future__ import annotations

import argparse
import html
import json
import sys
import threading
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crag_cli.index import TokenizerSettings  # noqa: E402
import data  # noqa: E402  (a path under benchmarks/DOMAIN/ is unpacked on demand)


def load_pages(path: Path) -> "OrderedDict[str, list[str]]":
    """Group the paragraphs of a web.jsonl by title, in file order."""
    pages: OrderedDict[str, list[str]] = OrderedDict()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                pages.setdefault(row["title"], []).append(row["text"])
    return pages


class WebIndex:
    """BM25 over pages."""

    def __init__(self, pages: "OrderedDict[str, list[str]]") -> None:
        import bm25s

        self.titles = list(pages)
        self.pages = pages
        self.tokenizer = TokenizerSettings()
        corpus = [f"{t}\n{t}\n" + "\n".join(ps) for t, ps in pages.items()]  # the title counts twice
        self.bm25 = bm25s.BM25(method="lucene")
        self.bm25.index(self.tokenizer.tokenize(corpus), show_progress=False)

    def search(self, query: str, k: int = 10) -> list[str]:
        import numpy as np

        tokens = [t for t in self.tokenizer.tokenize([query])[0] if t in self.bm25.vocab_dict]
        if not tokens:
            return []
        scores = self.bm25.get_scores(tokens)
        order = np.argsort(-scores, kind="stable")[:k]
        return [self.titles[i] for i in order if scores[i] > 0]


def page_html(title: str, paragraphs: list[str]) -> str:
    body = "".join(f"<p>{html.escape(p)}</p>\n" for p in paragraphs)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)} - Wikipedia</title></head>"
        "<body><div id='mw-navigation'><a href='/'>Main page</a> <a href='/random'>Random article</a> "
        "<a href='/donate'>Donate</a></div>"
        f"<div id='content'><h1>{html.escape(title)}</h1><div id='bodyContent'>{body}</div></div>"
        "<div id='footer'>Text is available under the Creative Commons Attribution-ShareAlike License.</div>"
        "</body></html>"
    )


def make_server(web: Path, host: str = "127.0.0.1", port: int = 0, results: int = 10) -> ThreadingHTTPServer:
    pages = load_pages(web)
    index = WebIndex(pages)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status: int, ctype: str, body: str) -> None:
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", f"{ctype}; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802
            parts = urlsplit(self.path)
            base = f"http://{self.server.server_address[0]}:{self.server.server_address[1]}"
            if parts.path == "/search":
                q = parse_qs(parts.query)
                if q.get("format") != ["json"]:
                    return self._send(403, "text/html", "<p>format=json required</p>")
                query = q.get("q", [""])[0]
                rows = [
                    {
                        "url": f"{base}/wiki/{quote(t.replace(' ', '_'), safe='')}",
                        "title": t,
                        "content": pages[t][0][:200],
                        "engine": "standin",
                    }
                    for t in index.search(query, results)
                ]
                return self._send(200, "application/json", json.dumps({"query": query, "results": rows}))
            if parts.path.startswith("/wiki/"):
                title = unquote(parts.path[len("/wiki/") :]).replace("_", " ")
                if title not in pages:
                    title = unquote(parts.path[len("/wiki/") :])
                if title in pages:
                    return self._send(200, "text/html", page_html(title, pages[title]))
            return self._send(404, "text/html", "<p>not found</p>")

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def start_in_thread(web: Path, port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Start the stand-in in a daemon thread; returns the server and its base URL."""
    server = make_server(web, port=port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--web", type=data.on_demand, required=True, help="web.jsonl (id, title, text)")
    parser.add_argument("--port", type=int, default=8799, help="port on 127.0.0.1 (0: any free port)")
    args = parser.parse_args()
    server = make_server(args.web, port=args.port)
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
