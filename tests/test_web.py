import json
import socket
import time
import tracemalloc

import pytest
from typer.testing import CliRunner

from crag_cli.assemble import part
from crag_cli.cli import app
from crag_cli.evaluator import MiniLMEvaluator
from crag_cli.reader import Generation
from crag_cli.web.search import DdgsBackend, SearchError, SearxngBackend, wikipedia_first
from crag_cli.web.cache import DiskCache
from crag_cli.web.fetch import Fetcher, address_is_public, check_url
from crag_cli.web.rewrite import accept_query, keyword_query, rewrite_query
from crag_cli.settings import Settings
from crag_cli.web.stage import WebOptions, WebSearch
from crag_cli.web import SearchResult
from webserver import LocalWeb


def stage_settings(**changes) -> WebOptions:
    """The web stage's settings in these tests: the strips ranked by the evaluator's score alone, every strip
    scored (as written for them), and ``changes``; the others as ``Settings`` has them."""
    return part(Settings(**{"ranking": "evaluator", "strips_scored": 10000, **changes}), WebOptions)


@pytest.fixture(scope="module")
def web():
    with LocalWeb() as server:
        yield server


@pytest.fixture(scope="module")
def minilm():
    return MiniLMEvaluator(batch_size=32, max_length=256)


class RecordingReader:
    """Returns a fixed reply and records the prompts it was given."""

    n_ctx = 2048

    def __init__(self, reply):
        self.reply, self.prompts = reply, []

    def count_tokens(self, messages):
        return sum(len(m["content"].split()) for m in messages)

    def generate(self, messages, max_tokens, on_token=None):
        self.prompts.append(messages)
        return Generation(self.reply, 0, 1)


def test_keyword_query_fallback():
    assert keyword_query("What is Henry Feilden's occupation?") == "Henry Feilden occupation"
    assert keyword_query("Who is it?") == "Who is it?"


@pytest.mark.parametrize(
    "raw, ok",
    [
        ("Henry Feilden, occupation", "Henry Feilden, occupation"),
        ("query: Henry Feilden, occupation\nmore", "Henry Feilden, occupation"),
        ("politician", None),  # an answer, not a query
        ("Henry Feilden was an English politician.", None),  # a sentence
        ("", None),
        ("Feilden, a, b, c", None),  # more than three keywords
    ],
)
def test_accept_query(raw, ok):
    assert accept_query(raw, "What is Henry Feilden's occupation?") == ok


def test_rewrite_puts_the_question_in_the_prompt_and_falls_back():
    gen = RecordingReader("Zorblat Quintana, occupation")
    assert rewrite_query("What is Zorblat Quintana's occupation?", gen, 24) == (
        "Zorblat Quintana, occupation",
        True,
        None,
    )
    assert gen.prompts[0][-1] == {"role": "user", "content": "question: What is Zorblat Quintana's occupation?"}
    assert [m["role"] for m in gen.prompts[0][:3]] == ["system", "user", "assistant"]
    query, rewritten, note = rewrite_query("What is Zorblat Quintana's occupation?", RecordingReader("sculptor"), 24)
    assert (query, rewritten) == ("Zorblat Quintana occupation", False) and "not a keyword query" in note


def test_url_guard():
    assert check_url("file:///etc/passwd", True).startswith("refused: scheme")
    assert "non-public address 127.0.0.1" in check_url("http://127.0.0.1:9/x", False)
    assert "non-public" in check_url("http://[::1]/", False)
    assert "non-public" in check_url("http://169.254.169.254/latest", False)
    assert "non-public" in check_url("http://10.1.2.3/", False)
    assert check_url("http://127.0.0.1:9/x", True) is None
    assert check_url("http://127.0.0.1:9/x", False, trusted_hosts=("127.0.0.1",)) is None


# Loopback, private and the other special-purpose ranges, as written in a URL: IPv4 in its other spellings, IPv6,
# and IPv6 addresses that wrap an IPv4 one (IPv4-mapped, IPv4-compatible, NAT64, 6to4), Teredo.
NON_PUBLIC_HOSTS = (
    *("127.0.0.1", "127.1", "2130706433", "0x7f000001", "0.0.0.0", "10.1.2.3", "172.16.0.1", "192.168.1.1"),
    *("169.254.169.254", "100.64.0.1", "198.18.0.1", "192.0.2.1", "224.0.0.1", "240.0.0.1", "255.255.255.255"),
    *("192.0.0.8", "192.0.0.9", "192.88.99.1"),
    *("[::1]", "[::]", "[::ffff:127.0.0.1]", "[::127.0.0.1]", "[fc00::1]", "[fe80::1]", "[ff02::1]", "[fec0::1]"),
    *("[64:ff9b::7f00:1]", "[64:ff9b:1::7f00:1]", "[2001:0:4136:e378:8000:63bf:80ff:fffe]", "[2001:db8::1]"),
    *("[2002:7f00:1::]", "[2002:a00:1::]", "[2002:c0a8:101::1]", "[3fff::1]", "[5f00::1]"),
)


def test_every_form_of_a_non_public_address_is_refused_and_nothing_is_fetched():
    with LocalWeb() as web:
        port = web.server.server_address[1]
        urls = [f"http://{host}:{port}/wiki/Zorblat_Quintana" for host in NON_PUBLIC_HOSTS]
        pages = Fetcher(timeout=1.0, max_bytes=2_000_000, allow_private=False).fetch_all(urls)
        assert web.server.requests == []  # 0.0.0.0, 127.1 and the like reach this server when they are let through
    let_through = {p.url: p.error for p in pages if "non-public address" not in (p.error or "")}
    assert not let_through and all(p.error.startswith("refused: ") for p in pages)


@pytest.mark.parametrize(
    "ip", ["8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8", "2002:808:808::", "64:ff9b::808:808"]
)
def test_a_public_address_passes_the_guard_also_wrapped_in_ipv6(ip):
    assert address_is_public(ip)
    host = f"[{ip}]" if ":" in ip else ip
    assert check_url(f"http://{host}/", False) is None


def test_searches_and_fetches_share_one_tls_context(web, monkeypatch):
    import httpx

    from crag_cli.web import fetch

    made = []
    real = httpx.create_ssl_context
    monkeypatch.setattr(httpx, "create_ssl_context", lambda *a, **k: made.append(1) or real(*a, **k))
    fetch.tls_context.cache_clear()
    backend, fetcher = (
        SearxngBackend(web.url, timeout=10.0, allow_private=False),
        Fetcher(trusted_hosts=("127.0.0.1",), timeout=10.0, max_bytes=2_000_000, allow_private=False),
    )
    for _ in range(3):  # three questions: a search and its pages each
        urls = [r.url for r in backend.search("zorblat", 2)]
        assert fetcher.fetch_all(urls)[0].status == 200
    assert len(made) == 1  # the CA bundle is read once, not twice a question
    fetch.tls_context.cache_clear()


def test_fetcher_limits(web):
    fetcher = Fetcher(timeout=10.0, max_bytes=100_000, allow_private=False, trusted_hosts=("127.0.0.1",))
    urls = [
        f"{web.url}{p}"
        for p in (
            "/wiki/Zorblat_Quintana",
            "/huge",
            "/report.pdf",
            "/missing",
            "/redirect-private",
            "/redirect-loop",
            "/notes.txt",
        )
    ]
    pages = {p.url.removeprefix(web.url): p for p in fetcher.fetch_all(urls)}
    slow = Fetcher(timeout=1.0, trusted_hosts=("127.0.0.1",), max_bytes=2_000_000, allow_private=False).fetch_all(
        [f"{web.url}/slow"]
    )
    pages["/slow"] = slow[0]
    assert pages["/wiki/Zorblat_Quintana"].status == 200 and "bronze birds" in pages["/wiki/Zorblat_Quintana"].body
    assert "timed out" in pages["/slow"].error
    assert pages["/huge"].truncated and len(pages["/huge"].body) <= 100_000
    assert pages["/report.pdf"].error == "unsupported content type application/pdf"
    assert pages["/missing"].error == "HTTP 404"
    assert (
        "redirect to http://localhost" in pages["/redirect-private"].error
        and "non-public" in pages["/redirect-private"].error
    )
    assert "more than 3 redirects" in pages["/redirect-loop"].error
    assert pages["/notes.txt"].content_type == "text/plain"
    assert all(ua.startswith("crag-cli/") for path, ua in web.server.requests if path == "/wiki/Zorblat_Quintana")
    refused = Fetcher(allow_private=False, timeout=10.0, max_bytes=2_000_000).fetch_all(
        [f"{web.url}/wiki/Zorblat_Quintana"]
    )[0]
    assert "non-public address 127.0.0.1" in refused.error


def test_packed_pages_are_unpacked_and_an_encoding_without_a_decoder_is_refused(web):
    fetcher = Fetcher(timeout=5.0, trusted_hosts=("127.0.0.1",), max_bytes=2_000_000, allow_private=False)
    paths = ("/gzip", "/deflate", "/raw-deflate", "/br")
    pages = dict(zip(paths, fetcher.fetch_all([f"{web.url}{p}" for p in paths])))
    for path in ("/gzip", "/deflate", "/raw-deflate"):
        page = pages[path]
        assert page.error is None and not page.truncated and "bronze birds" in page.body, (path, page)
    assert pages["/br"].error == "unsupported content encoding br" and pages["/br"].body == ""  # not its packed bytes


def test_a_bomb_in_three_layers_is_cut_at_the_byte_limit(web):
    fetcher = Fetcher(timeout=5.0, max_bytes=100_000, trusted_hosts=("127.0.0.1",), allow_private=False)
    page = fetcher.fetch_all([f"{web.url}/bomb?mib=64&layers=3"])[0]
    assert page.error is None and page.truncated and page.body == "a" * 100_000
    six = Fetcher(trusted_hosts=("127.0.0.1",), timeout=10.0, max_bytes=2_000_000, allow_private=False).fetch_all(
        [f"{web.url}/bomb?mib=1&layers=6"]
    )[0]
    assert six.error == "6 content encodings (at most 5 are unpacked)"


def test_searxng_backend(web):
    results = SearxngBackend(web.url, allow_private=False, timeout=10.0).search("zorblat", 3)  # its own host is trusted
    assert [r.url for r in results] == [
        f"{web.url}/wiki/Zorblat_Quintana",
        f"{web.url}/blog/quintana",
        f"{web.url}/notes.txt",
    ]
    assert results[0].snippet.startswith("snippet for")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    with pytest.raises(SearchError, match="unreachable"):
        SearxngBackend(f"http://127.0.0.1:{dead}", timeout=10.0, allow_private=False).search("x", 3)


@pytest.mark.parametrize(
    "body",
    [b'{"results": 5}', b'{"results": null}', b'{"results": true}', b'{"results": 1e999}', b"null", b"[]"]
    + [b'{"results": "http://a.org/"}', b'{"results": {"url": "http://a.org/"}}', b'{"results": [' + b"[" * 10**5],
)
def test_a_searxng_answer_without_a_results_list_is_a_search_failure(body):
    with LocalWeb(search_body=body) as server:
        with pytest.raises(SearchError, match="SearxNG answer is not its JSON results format"):
            SearxngBackend(server.url, timeout=10.0, allow_private=False).search("x", 3)


def test_a_bad_searxng_row_or_field_is_dropped_not_the_answer():
    rows = [
        5,
        None,
        "http://a.org/",
        ["http://a.org/"],
        {"title": "no url"},
        {"url": 7, "title": "a number"},
        {"url": "http://a.org/\ud800", "title": "a lone surrogate"},
        {"url": "http://a.org/1", "title": 5, "content": ["x"]},
        {"url": "http://a.org/2", "title": "Two", "content": "snippet \udc00", "score": {"deep": [1e999]}},
        {"url": "http://a.org/3", "title": "Three", "content": "fine"},
    ]
    body = ('{"query": "x \\udfff", "results": ' + json.dumps(rows).replace("\\\\u", "\\u") + "}").encode()
    with LocalWeb(search_body=body) as server:
        results = SearxngBackend(server.url, timeout=10.0, allow_private=False).search("x", 10)
    assert [(r.url, r.title, r.snippet) for r in results] == [
        ("http://a.org/1", "", ""),
        ("http://a.org/2", "Two", ""),
        ("http://a.org/3", "Three", "fine"),
    ]


@pytest.mark.slow
def test_a_searxng_answer_that_drips_ends_at_the_whole_request_limit(web):
    """A byte every 0.3 s never trips the 1 s read timeout: the whole answer has twice it, as a page has."""
    start = time.monotonic()
    with pytest.raises(SearchError, match="did not answer within 2 s"):
        SearxngBackend(f"{web.url}/drip", timeout=1.0, allow_private=False).search("x", 3)
    assert time.monotonic() - start < 4


def test_a_duckduckgo_answer_that_drips_ends_at_its_timeout(web):
    start = time.monotonic()
    with pytest.raises(SearchError, match="timed out after 1 s"):
        DdgsBackend(endpoint=f"{web.url}/drip/html/", timeout=1.0).search("x", 3)
    assert time.monotonic() - start < 4


def test_a_huge_searxng_answer_is_not_read_to_its_end(web):
    with pytest.raises(SearchError, match="SearxNG answer over 4 MB"):
        SearxngBackend(f"{web.url}/huge", timeout=5.0, allow_private=False).search("x", 3)


def test_a_searxng_answer_gzipped_into_a_bomb_is_not_unpacked_past_its_limit(web):
    """2.5 kB on the wire, 1 GiB unpacked (``gzip, gzip``): given up at 4 MB, never unpacked whole."""
    tracemalloc.start()
    try:
        with pytest.raises(SearchError, match="SearxNG answer over 4 MB"):
            SearxngBackend(f"{web.url}/bomb", timeout=5.0, allow_private=False).search("x", 3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000, peak  # the 4 MB read and the steps that made them; 2 GB before


def test_ddgs_contract_real_parser_against_local_server(web):
    backend = DdgsBackend(endpoint=f"{web.url}/html/", timeout=5)
    results = backend.search("zorblat quintana", 2)
    assert [r.url for r in results] == [f"{web.url}/wiki/Zorblat_Quintana", f"{web.url}/blog/quintana"]
    assert results[0].title == "Title /wiki/Zorblat_Quintana" and "zorblat quintana" in results[0].snippet
    with pytest.raises(SearchError, match="No results found.*rate-limits"):
        backend.search("nothing", 2)
    with pytest.raises(Exception, match="unknown ddgs engine"):
        DdgsBackend(engine="nope", timeout=10.0)


def test_wikipedia_first():
    rs = [
        SearchResult("https://blog.example/x"),
        SearchResult("https://en.wikipedia.org/wiki/X"),
        SearchResult("https://a.org"),
    ]
    assert [r.url for r in wikipedia_first(rs)] == [
        "https://en.wikipedia.org/wiki/X",
        "https://blog.example/x",
        "https://a.org",
    ]


def test_web_stage_extracts_refines_and_caches(web, minilm, tmp_path):
    stage = WebSearch(
        SearxngBackend(web.url, timeout=10.0, allow_private=False),
        minilm,
        RecordingReader("Zorblat Quintana, occupation"),
        Fetcher(timeout=2, allow_private=True, max_bytes=2_000_000),
        stage_settings(web_results=4, rewrite="model", strips=3),
        filter_threshold=-1,
        cache=DiskCache(tmp_path / "c", ttl=3600, max_bytes=200_000_000),
    )
    timings = {}
    ext = stage.run("What is Zorblat Quintana's occupation?", timings)
    assert ext.query == "Zorblat Quintana, occupation" and ext.rewritten
    status = {p["url"].removeprefix(web.url): p for p in ext.pages}
    assert status["/wiki/Zorblat_Quintana"]["status"] == 200 and status["/report.pdf"]["error"].startswith(
        "unsupported"
    )
    assert any("sculptor" in s.text for s in ext.strips)
    assert all(s.source.startswith(web.url) for s in ext.strips)
    assert not any("Main menu" in s.text or "Privacy policy" in s.text for s in ext.strips)
    assert {"rewrite", "search", "refine"} <= set(timings)
    before = len(web.server.requests)
    again = stage.run("What is Zorblat Quintana's occupation?", {})
    assert len(web.server.requests) == before + 1  # only the PDF (not cached: it failed) is fetched again
    assert [s.text for s in again.strips] == [s.text for s in ext.strips]
    assert any(p.get("cached") for p in again.pages)


def test_web_stage_searches_the_question_words_by_default_without_the_reader(web, minilm):
    """The default query costs no model call: the question's content words, what the search engine ranks by."""
    gen = RecordingReader("Zorblat Quintana, occupation")
    stage = WebSearch(
        SearxngBackend(web.url, timeout=10.0, allow_private=False),
        minilm,
        gen,
        Fetcher(timeout=2, allow_private=True, max_bytes=2_000_000),
        stage_settings(web_results=2),
        -0.5,
    )
    ext = stage.run("What is Zorblat Quintana's occupation?", {})
    assert ext.query == "Zorblat Quintana occupation" and not ext.rewritten and gen.prompts == []
    assert any("sculptor" in s.text for s in ext.strips)


def test_web_stage_falls_back_to_snippets(minilm):
    with LocalWeb(result_paths=("/report.pdf", "/empty")) as server:
        stage = WebSearch(
            SearxngBackend(server.url, timeout=10.0, allow_private=False),
            minilm,
            None,
            Fetcher(timeout=2, allow_private=True, max_bytes=2_000_000),
            stage_settings(rewrite="none"),
            filter_threshold=-1,
        )
        ext = stage.run("zorblat quintana", {})
    assert ext.query == "zorblat quintana" and not ext.rewritten
    assert ext.from_snippets and ext.strips and "snippets" in ext.error


def _ask(*args):
    return CliRunner().invoke(app, ["ask", *map(str, args)])


def test_ask_incorrect_uses_the_web_and_shows_urls(web, built_index, tiny_gguf):
    r = _ask(
        "What is Zorblat Quintana's occupation?",
        "--index",
        built_index,
        "--model",
        tiny_gguf,
        "--upper",
        "1",
        "--lower",
        "1",
        "--web",
        "searxng",
        "--searxng-url",
        web.url,
        "--allow-private",
        "--max-tokens",
        "4",
        "--no-cache",
    )
    assert r.exit_code == 0, r.output
    assert "action: INCORRECT" in r.stderr
    assert f"source [1] {web.url}/" in r.stderr
    r = _ask(
        "What is Zorblat Quintana's occupation?",
        "--index",
        built_index,
        "--model",
        tiny_gguf,
        "--upper",
        "1",
        "--lower",
        "1",
        "--web",
        "searxng",
        "--searxng-url",
        web.url,
        "--allow-private",
        "--max-tokens",
        "4",
        "--no-cache",
        "--rewrite",
        "none",
        "--json",
    )
    rec = json.loads(r.stdout)
    ext = rec["external_knowledge"]
    assert ext["backend"] == "searxng" and ext["query"] == "What is Zorblat Quintana's occupation?"
    assert ext["strips"] and all(s["url"].startswith(web.url) for s in ext["strips"])
    assert {p["url"] for p in ext["pages"]} >= {f"{web.url}/wiki/Zorblat_Quintana"}
    assert rec["internal_knowledge"] is None and rec["error"] is None


def _ask_ambiguous_with_searxng(index, model, url: str):
    """``crag ask --json`` of a question judged Ambiguous (its passages and the web), searching ``url``."""
    args = ("--index", index, "--model", model, "--upper", "1", "--lower", "-1", "--filter-threshold", "-1")
    args += ("--max-tokens", "4")
    r = _ask("capital of Germany?", *args, "--web", "searxng", "--searxng-url", url, "--no-cache", "--json")
    assert r.exit_code == 0, r.output
    rec = json.loads(r.stdout)
    assert rec["action"] == "ambiguous" and rec["internal_knowledge"] and rec["answer"] is not None
    return rec


@pytest.mark.slow
def test_web_failure_never_crashes_ask(built_index, tiny_gguf):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    rec = _ask_ambiguous_with_searxng(built_index, tiny_gguf, f"http://127.0.0.1:{dead}")
    assert "search failed: SearxNG unreachable" in rec["external_knowledge"]["error"]


@pytest.mark.slow
def test_a_searxng_answer_without_a_results_list_never_crashes_ask(built_index, tiny_gguf):
    with LocalWeb(search_body=b'{"results": 5}') as server:
        rec = _ask_ambiguous_with_searxng(built_index, tiny_gguf, server.url)
    assert "search failed: SearxNG answer is not its JSON results format" in rec["external_knowledge"]["error"]
