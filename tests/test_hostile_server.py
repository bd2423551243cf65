"""A reader server that answers badly on purpose (issue 78), and a reader URL or key that cannot be used: each probe
that broke, as a test that failed before its fix. The servers are real, on loopback ports of 127.0.0.1."""

from __future__ import annotations

import base64
import json
import threading
import time
import tracemalloc
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from test_safety import invoke, one_error_line
from test_served import run
from webserver import gzip_bomb

from crag_cli.reader import Connection, ModelError, ServedBackend, ServedReader

KEY = "sk-hostile-0123456789abcdef"
PASSWORD = "SECRET-pw-42"
MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # clients that hang up early are part of the tests
        pass


class Hostile(BaseHTTPRequestHandler):
    """A reader server that answers each path as ``self.server.routes[path]`` says (a function of the handler and
    the request's JSON body); ``/v1/models`` lists ``m1`` unless a route says otherwise, anything else is 404."""

    def log_message(self, *args) -> None:  # quiet
        pass

    def _route(self, body) -> None:
        self.server.seen.append((self.command, self.path, self.headers.get("Authorization")))
        route = self.server.routes.get(self.path)
        try:
            if route is not None:
                route(self, body)
            elif self.path == "/v1/models":
                send(self, 200, {"data": [{"id": "m1", "owned_by": "someone"}]})
            else:
                send(self, 404, {"error": "not found"})
        except OSError:  # crag stopped reading: what these servers are for
            pass

    def do_GET(self) -> None:  # noqa: N802
        self._route(None)

    def do_POST(self) -> None:  # noqa: N802
        self._route(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))


def send(h, status: int, body, headers: dict | None = None) -> None:
    """An answer of ``status`` with ``body`` (JSON, or bytes as they are) and a Content-Length."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        h.send_header(name, value)
    h.end_headers()
    h.wfile.write(data)


def stream_head(h) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.end_headers()


def answering(*pieces: str, done: bool = True):
    """A chat route that streams ``pieces`` (then a usage event and, when ``done``, ``[DONE]``)."""

    def route(h, body) -> None:
        stream_head(h)
        for piece in pieces:
            event = {"choices": [{"index": 0, "delta": {"content": piece}}]}
            h.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        usage = {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": len(pieces)}}
        h.wfile.write(f"data: {json.dumps(usage)}\n\n".encode() + (b"data: [DONE]\n\n" if done else b""))

    return route


def dripping(json_body: bool, every: float = 0.3, n: int = 40):
    """A route that sends its headers, then one byte every ``every`` seconds, ``n`` of them, no end of line."""

    def route(h, body) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json" if json_body else "text/event-stream")
        if json_body:
            h.send_header("Content-Length", str(n))
        h.end_headers()
        for _ in range(n):
            h.wfile.write(b"x")
            h.wfile.flush()
            time.sleep(every)

    return route


@pytest.fixture()
def server():
    """``(routes, seen, url)``: a :class:`Hostile` server on a loopback port."""
    httpd = _Server(("127.0.0.1", 0), Hostile)
    httpd.routes, httpd.seen = {}, []
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield httpd.routes, httpd.seen, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def reader(url: str, **connection) -> ServedReader:
    return ServedReader(Connection(url, **connection), "m1", 4096, 0.0, 0)


# ----------------------------------------------------------------------------- 1: what a server says of itself


@pytest.mark.parametrize(
    "models, props",
    [
        ({"data": [{"id": "m1", "owned_by": "llamacpp", "meta": "str"}]}, {"build_info": "b1"}),
        ({"data": ["m1", {"id": "m1", "owned_by": "llamacpp"}]}, {"default_generation_settings": [1, 2]}),
    ],
    ids=["meta-a-string", "a-model-that-is-a-string"],
)
def test_fields_of_the_wrong_type_read_as_absent(server, models, props):
    """(No /props at all: tests/test_own_server.py.)"""
    routes, _, url = server
    routes["/v1/models"] = lambda h, body: send(h, 200, models)
    routes["/props"] = lambda h, body: send(h, 200, props)
    info = Connection(url).info()
    assert info.llama_cpp and info.models == ["m1"] and info.slot_ctx is None
    # a server that claims llama.cpp but lacks its endpoints: the error names the one that failed
    with pytest.raises(ModelError, match="/apply-template: 404 Not Found"):
        reader(url).count_tokens(MESSAGES)


# ----------------------------------------------------------------------------- 2: a whole request's deadline


def test_a_body_that_drips_is_cut_at_the_whole_request_deadline(server):
    routes, _, url = server
    routes["/v1/models"] = dripping(json_body=True)  # a byte every 0.3 s: no read ever times out
    started = time.monotonic()
    with pytest.raises(ModelError, match="/v1/models gave no complete answer within 2 s"):
        Connection(url, timeout=2).info()
    assert time.monotonic() - started < 4


def test_a_stream_that_drips_without_a_line_end_is_cut_at_the_answer_deadline(server):
    from crag_cli import assemble
    from crag_cli.settings.layers import load_settings

    routes, _, url = server
    routes["/v1/chat/completions"] = dripping(json_body=False)
    started = time.monotonic()
    with pytest.raises(ModelError, match="no complete answer within 2 s"):
        reader(url, answer_timeout=2).generate(MESSAGES, 8)
    assert time.monotonic() - started < 4
    settings = load_settings(env={"CRAG_READER_URL": url, "CRAG_MODEL": "m1", "CRAG_READER_TIMEOUT": "2"})
    assert settings.reader_timeout == 2
    started = time.monotonic()
    with pytest.raises(ModelError, match="no complete answer within 2 s"):
        assemble.reader(settings).generate(MESSAGES, 8)
    assert time.monotonic() - started < 4


# ----------------------------------------------------------------------------- 3, 4: bounded bodies and answers


def test_an_answer_past_its_bound_is_cut_and_said_so(server):
    routes, _, url = server
    routes["/v1/chat/completions"] = answering(*["word " * 1600] * 100)  # 800 kB for 8 tokens: max_tokens ignored
    with pytest.raises(ModelError, match="the answer was cut at crag's bound of 64 KiB of text for 8 tokens"):
        reader(url).generate(MESSAGES, 8)
    routes["/v1/chat/completions"] = answering(*["word " * 1600] * 16)
    assert reader(url).generate(MESSAGES, 8000).text == "word " * 1600 * 16  # 128 kB for 8,000 tokens: read


def _one_huge_event(h, body) -> None:
    stream_head(h)
    chunk = b"x" * (1 << 20)
    h.wfile.write(b'data: {"choices": [{"delta": {"content": "')
    for _ in range(32):  # 32 MiB in one line
        h.wfile.write(chunk)
    h.wfile.write(b'"}}]}\n\ndata: [DONE]\n\n')


def test_one_streamed_line_is_cut_at_its_bound_in_bounded_memory(server):
    routes, _, url = server
    routes["/v1/chat/completions"] = _one_huge_event
    gen = reader(url)
    gen.load()
    tracemalloc.start()
    try:
        with pytest.raises(ModelError, match="streamed a line over crag's bound of 1 MiB"):
            gen.generate(MESSAGES, 8)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_a_json_body_is_cut_at_its_bound_as_it_is_unpacked(server, packed):
    routes, _, url = server
    body = gzip_bomb(64, layers=1) if packed else b'{"data": [], "pad": "' + b"a" * (5 << 20) + b'"}'
    headers = {"Content-Encoding": "gzip"} if packed else {}
    routes["/v1/models"] = lambda h, _: send(h, 200, body, headers)
    tracemalloc.start()
    try:
        with pytest.raises(ModelError, match="/v1/models answered a body over crag's bound of 4 MiB"):
            Connection(url).info()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak  # the 4 MiB kept and the steps that made them, not the 64 MiB gzip unpacks to


# ----------------------------------------------------------------------------- 5: a cut stream, a redirect


def test_a_stream_that_ends_before_done_is_an_error_not_an_answer(server):
    routes, _, url = server
    routes["/v1/chat/completions"] = answering("Paris", " is", done=False)
    with pytest.raises(ModelError, match=r"the server's stream ended before \[DONE\]: the answer may be cut"):
        reader(url).generate(MESSAGES, 8)


@pytest.mark.parametrize("path, status", [("/v1/models", 302), ("/v1/chat/completions", 307)])
def test_a_redirect_is_an_error_naming_its_status_never_followed(server, path, status):
    routes, seen, url = server
    routes[path] = lambda h, body: send(h, status, b"", {"Location": f"{url}/elsewhere"})
    with pytest.raises(ModelError, match=f"{path}: {status} .*a redirect to {url}/elsewhere"):
        reader(url).generate(MESSAGES, 8)
    assert not any(p == "/elsewhere" for _, p, _ in seen)


# ----------------------------------------------------------------------------- 6, 7: the URL's password, the key


def test_a_password_in_the_reader_url_is_used_never_shown_or_stored(server):
    from crag_cli.batch.identity import run_identity
    from crag_cli.settings.layers import load_settings
    from crag_cli.settings import Settings, SettingsError

    routes, seen, url = server
    secret_url = url.replace("//", f"//user:{PASSWORD}@") + "/v1"
    gen = ServedReader(Connection(secret_url), "m9", 4096, 0.0, 0)
    with pytest.raises(ModelError) as refused:
        gen.load()
    assert f"reader server {url.replace('//', '//***@')} has no model 'm9'" in str(refused.value)
    assert seen[0][2] == "Basic " + base64.b64encode(f"user:{PASSWORD}".encode()).decode()  # used all the same
    identity = run_identity(Settings(reader_url=secret_url, model="m1"), "no-retrieval", None, {})
    assert PASSWORD not in json.dumps(identity) and identity["reader_url"] == url.replace("//", "//***@") + "/v1"
    assert PASSWORD not in ServedBackend(secret_url).fingerprint("m1")
    with pytest.raises(SettingsError) as bad:
        load_settings(flags={"reader_url": secret_url.replace("/v1", ":abc")})
    assert PASSWORD not in str(bad.value) and "***@" in str(bad.value)
    routes["/v1/chat/completions"] = lambda h, body: send(h, 400, {"error": {"message": f"bad {secret_url}"}})
    with pytest.raises(ModelError) as failed:
        ServedReader(Connection(secret_url, timeout=5), "m1", 4096, 0.0, 0).generate(MESSAGES, 8)
    assert PASSWORD not in str(failed.value) and "400" in str(failed.value)


def _echo_credentials(h, body) -> None:
    """Streams back what the request's Authorization header holds: the key, or the URL's user name and password."""
    kind, _, value = h.headers["Authorization"].partition(" ")
    secret = value if kind == "Bearer" else base64.b64decode(value).decode().partition(":")[2]
    answering("Yours is ", secret[:7], secret[7:], f", I mean {secret}.")(h, body)


@pytest.mark.parametrize("with_key", [True, False], ids=["key", "password"])
def test_the_key_or_password_echoed_in_an_answer_is_redacted_in_its_text_and_its_stream(server, with_key):
    routes, _, url = server
    routes["/v1/chat/completions"] = _echo_credentials
    conn = Connection(url, api_key=KEY) if with_key else Connection(url.replace("//", f"//me:{PASSWORD}@"))
    streamed: list[str] = []
    out = ServedReader(conn, "m1", 4096, 0.0, 0).generate(MESSAGES, 16, streamed.append)
    shown = "[key]" if with_key else "***"
    assert out.text == "".join(streamed) == f"Yours is {shown}, I mean {shown}."


# ----------------------------------------------------------------------------- 8, 9: a key or URL that cannot work


@pytest.mark.parametrize("key", ["sk-abc\r\nX-Evil: 1", "sk-abc\n", "sk-ключ-123"], ids=["crlf", "lf", "non-ascii"])
def test_a_key_that_no_header_can_carry_is_one_line_before_any_connection(server, built_index, key):
    _, seen, url = server
    started = time.monotonic()
    r = run(
        "ask",
        "Capital?",
        "--index",
        built_index,
        "--reader-url",
        url,
        "--model",
        "m1",
        env={"CRAG_READER_API_KEY": key},
    )
    one_error_line(r, "CRAG_READER_API_KEY", "the key is not shown")
    assert key.strip() not in r.output and "sk-" not in r.output and not seen and "Traceback" not in r.output
    assert time.monotonic() - started < 5  # no retries


def test_a_reader_url_that_is_no_url_is_one_line(built_index):
    r = invoke("ask", "Capital?", "--index", built_index, "--reader-url", "http://127.0.0.1:abc", "--model", "m1")
    one_error_line(r, "reader_url", "port is not a number")
    with pytest.raises(ModelError, match="port is not a number"):
        Connection("http://127.0.0.1:abc")


# ----------------------------------------------------------------------------- 6 whole: a batch's files


@pytest.mark.slow
def test_a_batch_by_a_url_with_a_password_stores_it_nowhere(server, built_index, tmp_path):
    routes, _, url = server
    routes["/v1/chat/completions"] = answering("Paris.")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "What is the capital of France?"}) + "\n")
    out = tmp_path / "out.jsonl"
    secret_url = url.replace("//", f"//user:{PASSWORD}@")
    r = run("batch", questions, "-o", out, "--index", built_index, "--reader-url", secret_url, "--model", "m1")
    assert r.exit_code == 0, r.output
    written = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json"))
    assert "Paris." in out.read_text() and "***@127.0.0.1" in written
    assert PASSWORD not in written and PASSWORD not in r.output
