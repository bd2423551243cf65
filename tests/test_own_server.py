"""A user's own reader server as its user meets it (issue 78): the window it says it has, what it counts, what a
record says was sent and counted. The servers are :class:`test_hostile_server.Hostile` on loopback ports."""

from __future__ import annotations

import json
import math

import pytest
from test_hostile_server import MESSAGES, send, server, stream_head  # noqa: F401 - server is a fixture
from test_served import run

from crag_cli.reader import Connection, ServedReader, served

WINDOW = 450  # the small server's window, in its own tokens


def count(body: dict) -> int:
    """The fake server's own token count of a chat request: 2 bytes a token (denser than crag's bound)."""
    return math.ceil(sum(len(m["content"].encode()) for m in body["messages"]) / 2)


def chat(answer: str = "Paris", window: int | None = None, usage: dict | None = None, model: str = "m1-q4"):
    """A chat route that answers ``answer``, naming ``model``; a prompt past ``window`` is cut without a word (it
    answers ``TRUNCATED``); ``usage`` (default: its count) is its last event's; each prompt's count is kept in
    the route's ``counts``."""

    def route(h, body) -> None:
        n = count(body)
        route.counts.append(n)
        text = "TRUNCATED" if window and n + body["max_tokens"] > window else answer
        stream_head(h)
        event = {"model": model, "choices": [{"index": 0, "delta": {"content": text}}]}
        h.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        said = usage if usage is not None else {"prompt_tokens": min(n, window or n), "completion_tokens": 1}
        h.wfile.write(f"data: {json.dumps({'choices': [], 'usage': said})}\n\ndata: [DONE]\n\n".encode())

    route.counts = []
    return route


@pytest.fixture()
def index(tmp_path):
    """An index of five documents that each say where Anna Example was born (the reader reads them all)."""
    from crag_cli.index import build_index

    docs = tmp_path / "anna"
    docs.mkdir()
    for i in range(5):
        text = f"Anna Example, the painter of volume {i}, was born in Utrecht in 1901. " * 3
        (docs / f"anna{i}.txt").write_text(text + f"This is note {i} of the catalogue of her landscapes.")
    build_index(docs, tmp_path / "anna-index")
    return tmp_path / "anna-index"


@pytest.fixture()
def small(server):  # noqa: F811
    """A chat-only server (``/v1/models``, ``/v1/chat/completions``) with a window of :data:`WINDOW` tokens that it
    says in ``/v1/models`` (vLLM's ``max_model_len``) and a prompt past it cut without a word."""
    routes, seen, url = server
    routes["/v1/models"] = lambda h, body: send(h, 200, {"data": [{"id": "m1", "max_model_len": WINDOW}]})
    routes["/v1/chat/completions"] = chat(window=WINDOW)
    return routes, url


def ask(url: str, index, *more: str):
    args = ["ask", "Where was Anna Example born?", "--index", index, "--reader-url", url, "--model", "m1"]
    return run(*args, "--task", "popqa", "--max-tokens", "8", "--read-share", "0", "--read-words", "2000", *more)


def test_a_prompt_is_fitted_to_the_window_the_server_says_and_the_record_says_what_was_sent(small, index):
    routes, url = small
    r = ask(url, index, "--json")
    assert r.exit_code == 0, r.output
    rec = json.loads(r.stdout)
    assert rec["answer"] == "Paris"  # not the answer to a prompt the server cut
    cut = rec["knowledge_cut"]
    assert cut["window"] == WINDOW and cut["counted_by"] == "bound" and cut["sent"] < cut["given"]
    assert "prompts are fitted to it, not to --n-ctx 4096" in r.stderr and str(WINDOW) in r.stderr
    assert rec["prompt_tokens_source"] == "server" and rec["served_model"] == "m1-q4" and rec["model"] == "m1"
    assert all(n + 8 <= WINDOW for n in routes["/v1/chat/completions"].counts)  # the server cut no prompt


def test_crag_ask_lists_only_the_knowledge_sent_and_warns_of_the_cut(small, index):
    _, url = small
    r = ask(url, index)
    assert r.exit_code == 0, r.output
    listed = [line for line in r.stderr.splitlines() if line.startswith("knowledge [")]
    warning = next(line for line in r.stderr.splitlines() if line.startswith("warning: the prompt holds"))
    assert f"holds {len(listed)} of the " in warning and f"window of {WINDOW} tokens" in warning
    assert "counted by a bound" in warning and r.stdout.strip() == "Paris"


def test_a_window_the_server_does_not_say_is_said_once_on_stderr(server, index):  # noqa: F811
    routes, seen, url = server
    routes["/v1/chat/completions"] = chat()
    r = ask(url, index, "--n-ctx", "2048")
    assert r.exit_code == 0, r.output
    assert r.stderr.count("it does not say its context window: prompts are fitted to --n-ctx 2048 tokens") == 1


@pytest.mark.parametrize(
    "props, window",
    [({"default_generation_settings": {"n_ctx": 1024}}, 1024), ({"n_ctx": 768}, 768), ({"build_info": "b1"}, None)],
    ids=["slot", "top-level", "none"],
)
def test_a_llama_servers_window_is_read_from_props(server, props, window):  # noqa: F811
    routes, _, url = server
    routes["/v1/models"] = lambda h, body: send(h, 200, {"data": [{"id": "m1", "owned_by": "llamacpp"}]})
    routes["/props"] = lambda h, body: send(h, 200, props)
    gen = ServedReader(Connection(url), "m1", 4096, 0.0, 0)
    assert Connection(url).info().slot_ctx == window and gen.n_ctx == (window or 4096)


def test_a_server_that_claims_llama_cpp_without_props_is_read_as_a_chat_server(server, capsys):  # noqa: F811
    routes, _, url = server
    models = {"data": [{"id": "m1", "owned_by": "llamacpp", "meta": {"vocab_type": 2}}]}
    routes["/v1/models"] = lambda h, body: send(h, 200, models)
    routes["/v1/chat/completions"] = chat()
    gen = ServedReader(Connection(url), "m1", 4096, 0.0, 0)
    out = gen.generate(MESSAGES, 8)
    assert out.text == "Paris" and out.served_model == "m1-q4" and gen.counted_by == "bound"
    assert gen.count_tokens(MESSAGES) == served.estimate_tokens(MESSAGES)
    assert (
        "/v1/models says llama.cpp but the server has no /props: spoken to as a chat server" in capsys.readouterr().err
    )


def test_a_chat_server_with_llama_cpps_tokenizer_counts_prompts_with_it(server):  # noqa: F811
    routes, seen, url = server
    routes["/v1/chat/completions"] = chat(usage={})  # no usage: the count is crag's, by the server's tokenizer
    routes["/apply-template"] = lambda h, body: send(h, 200, {"prompt": "<s>" + body["messages"][0]["content"]})
    routes["/tokenize"] = lambda h, body: send(h, 200, {"tokens": list(range(len(body.get("content", "").split())))})
    gen = ServedReader(Connection(url), "m1", 4096, 0.0, 0)
    assert gen.count_tokens(MESSAGES) == len(("<s>" + MESSAGES[0]["content"]).split()) and gen.counted_by == "server"
    out = gen.generate(MESSAGES, 8)
    assert out.prompt_tokens == gen.count_tokens(MESSAGES) and out.prompt_source == "counted"


@pytest.mark.parametrize(
    "usage, source",
    [
        ({"prompt_tokens": 40, "prompt_tokens_details": {"cached_tokens": 30}}, "server"),
        ({"prompt_tokens": 40}, "server-no-cache"),
        ({}, "estimate"),
    ],
    ids=["usage-with-cache", "usage-without-cache", "no-usage"],
)
def test_the_record_says_where_its_prompt_tokens_come_from(server, index, usage, source):  # noqa: F811
    routes, _, url = server
    routes["/v1/chat/completions"] = chat(answer="Anna Example was born in Utrecht.", usage=usage)
    r = ask(url, index, "--json", "--task", "docqa")  # docqa's answer is checked: a second prompt
    assert r.exit_code == 0, r.output
    rec = json.loads(r.stdout)
    assert rec["checked"] is not None and rec["prompt_tokens_source"] == source


def test_the_answer_limit_is_the_setting_for_crags_engine_too(tiny_gguf):
    from crag_cli.reader import EngineReader, ReaderOptions
    from crag_cli.settings import Settings

    options = ReaderOptions.of(Settings(reader_timeout=7.5))
    assert EngineReader(str(tiny_gguf), options).answer_timeout == 7.5
