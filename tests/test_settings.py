from pathlib import Path

import pytest

from crag_cli.settings.layers import load_settings, read_config, write_config
from crag_cli.settings import Settings, SettingsError


def test_precedence_flags_over_env_over_file_over_defaults(tmp_path):
    (tmp_path / "crag.toml").write_text('top_k = 3\nstrips = 7\nevaluator = "t5:/m"\nupper = 0.4\n')
    env = {"CRAG_TOP_K": "4", "CRAG_STRIPS": "8"}
    s = load_settings({"top_k": 5, "upper": None}, env=env, cwd=tmp_path)
    assert s.top_k == 5  # flag
    assert s.strips == 8  # env
    assert s.evaluator == "t5:/m" and s.upper == 0.4  # file
    assert s.batch_size == Settings().batch_size  # default


def test_config_from_env_variable_and_table(tmp_path):
    cfg = tmp_path / "other.toml"
    cfg.write_text('[crag]\nweb = "searxng"\nsearxng_url = "http://127.0.0.1:8888/"\nrewrite = "none"\n')
    s = load_settings({}, env={"CRAG_CONFIG": str(cfg)}, cwd=tmp_path)
    assert s.web == "searxng" and s.rewrite == "none" and s.searxng_url == "http://127.0.0.1:8888"


@pytest.mark.parametrize(
    "env, message",
    [
        (
            {"CRAG_TOP_K": "ten"},
            "bad value 'ten' for top_k .from environment variable CRAG_TOP_K.: input should be a valid integer",
        ),
        (
            {"CRAG_REWRITE": "maybe"},
            "for rewrite .from environment variable CRAG_REWRITE.: input should be 'words', 'model' or 'none'",
        ),
    ],
)
def test_bad_values_are_clear_errors(env, message, tmp_path):
    with pytest.raises(SettingsError, match=message):
        load_settings({}, env=env, cwd=tmp_path)


def test_unknown_key_in_file_is_an_error(tmp_path):
    (tmp_path / "crag.toml").write_text("topk = 3\n")
    with pytest.raises(SettingsError, match="unknown setting 'topk'"):
        load_settings({}, env={}, cwd=tmp_path)


def test_write_config_keeps_other_keys(tmp_path):
    path = tmp_path / "crag.toml"
    path.write_text('model = "smollm2-135m"\nupper = 0.1\n')
    write_config(path, {"upper": 0.61, "lower": 0.4, "evaluator": "minilm"})
    assert read_config(path) == {"model": "smollm2-135m", "upper": 0.61, "lower": 0.4, "evaluator": "minilm"}
    assert load_settings({}, env={}, cwd=tmp_path).upper == 0.61
    assert isinstance(load_settings({"index": "x"}, env={}, cwd=tmp_path).index, Path)


def test_every_setting_that_changes_answers_is_in_a_batch_run_identity():
    """--resume compares the run identity: a setting declared answers=True that it missed would mix records."""
    from crag_cli.action.trigger import Thresholds
    from crag_cli.batch import RESOLVED_GROUPS, run_identity
    from crag_cli.settings.info import answer_settings, changes_answers, field_names, group

    assert all(isinstance(Settings.model_fields[n].json_schema_extra["answers"], bool) for n in field_names())
    assert {"top_k", "ranking", "strips", "model", "strips_scored"} <= set(answer_settings())
    assert not any(changes_answers(n) for n in ("batch_size", "threads", "cache", "fetch_timeout"))
    th = Thresholds(0.5, -0.5, -0.9)
    model = "qwen2.5-coder-0.5b"  # an embedded model in the models extra: its fingerprint is the pinned digest
    base = Settings(model=model, web="searxng", searxng_url="http://127.0.0.1:1")
    before = run_identity(base, "crag", th, {})
    for name in answer_settings():
        if group(name) in RESOLVED_GROUPS:
            continue  # the index and the thresholds enter as their fingerprint and resolved values
        assert name in before, name
        if name in ("model", "evaluator", "web", "searxng_url", "reader_url", "task"):
            continue  # checked by their own fingerprints and tests; a changed value needs real files
        info = Settings.model_fields[name]
        choices = [c for c in getattr(info.annotation, "__args__", ()) if isinstance(c, str)]
        current = getattr(base, name)
        other = next((c for c in choices if c != current), None)
        if other is None:
            other = (not current) if isinstance(current, bool) else (current or 2) - 1
            if isinstance(current, float) and 0 < current <= 1:  # a share: half of it stays in range
                other = current / 2
        assert run_identity(base.replace(**{name: other}), "crag", th, {})[name] != before[name], name
    # plain RAG reads the evaluator only for --task auto (its domain picks the prompt): only then is it in
    assert run_identity(base.replace(task="auto"), "rag", th, {})["evaluator"] == base.evaluator
    assert "evaluator" not in run_identity(base.replace(task="popqa"), "rag", th, {})


def test_the_pipeline_reads_its_settings_whole_so_a_new_setting_needs_no_wiring(built_index):
    """assemble.py hands the pipeline the settings themselves: a new refine setting reaches it with no wiring, and the
    pipeline keeps no default of its own (tests/test_defaults.py)."""
    from crag_cli import assemble
    from crag_cli.pipeline.fakes import FakeEvaluator, FakeRetriever
    from crag_cli.pipeline.corrective import Pipeline
    from crag_cli.action.knowledge import ActionReading

    settings = Settings(index=built_index, strips=4, strips_correct=2, lexical_support=0.7)
    pipe = assemble.pipeline(settings, with_reader=False)
    assert pipe.settings == settings and pipe.settings is not settings  # its own copy
    assert pipe.reading == ActionReading.of(settings, pipe.thresholds.upper) and pipe.reading.strips_correct == 2
    assert Pipeline(FakeRetriever([]), FakeEvaluator({}), pipe.thresholds).settings == Settings()  # the defaults


def test_the_evaluator_and_the_reader_take_their_settings_by_name():
    import inspect

    from crag_cli.assemble import PROMPT_SETTINGS
    from crag_cli.evaluator import build_evaluator
    from crag_cli.reader import ReaderOptions
    from crag_cli.settings.info import names_in

    evaluator = set(inspect.signature(build_evaluator).parameters) | {"evaluator"}  # the spec, first
    assert set(names_in("evaluator")) <= evaluator
    reader = set(inspect.signature(ReaderOptions).parameters) | set(PROMPT_SETTINGS) | {"model"}
    assert set(names_in("reader")) <= reader


@pytest.mark.parametrize("name", ["web", "rewrite"])
def test_none_is_a_choice_where_a_setting_offers_it(name, tmp_path):
    assert getattr(load_settings({name: "none"}, env={}, cwd=tmp_path), name) == "none"
    assert getattr(load_settings({}, env={f"CRAG_{name.upper()}": "none"}, cwd=tmp_path), name) == "none"


def test_a_pipeline_without_a_reader_has_a_web_stage_only_when_asked(built_index, monkeypatch):
    """``crag evaluate`` and the benchmarks build no reader; a benchmark that reads the web asks for it."""
    from crag_cli import assemble
    from crag_cli.web.stage import WebSearch

    settings = Settings(index=built_index, web="searxng", searxng_url="http://127.0.0.1:9", allow_private=True)
    assert assemble.pipeline(settings, with_reader=False).web is None
    web = assemble.pipeline(settings, with_reader=False, with_web=True).web
    assert isinstance(web, WebSearch) and web.reader is None  # no model rewrites the query
    assert assemble.pipeline(settings.replace(web="none"), with_reader=False, with_web=True).web is None
    # with a reader the web stage follows it unless told otherwise (no model is loaded here)
    monkeypatch.setattr("crag_cli.reader.backends.check_model", lambda model: None)
    monkeypatch.setattr(assemble, "reader", lambda settings: None)
    assert isinstance(assemble.pipeline(settings).web, WebSearch)
    assert assemble.pipeline(settings, with_web=False).web is None


@pytest.mark.parametrize("where", ["flag", "config"])
def test_a_model_name_too_long_for_a_file_is_one_line_before_any_model_loads(where, built_index, tmp_path, monkeypatch):
    from test_safety import invoke, one_error_line

    from crag_cli.reader import ModelError, resolve_model

    monkeypatch.setattr("crag_cli.reader.backends.EngineReader", None)  # loading a model would fail the test
    long = "a" * 300
    args = ["ask", "What does the pass statement do?", "--index", built_index, "--max-tokens", "8", "-k", "3"]
    if where == "flag":
        r = invoke(*args, "--model", long)
    else:
        (tmp_path / "crag.toml").write_text(f'model = "{long}"\n')
        r = invoke("--config", tmp_path / "crag.toml", *args)
    one_error_line(r, "for model", "no such model (not a usable file name: File name too long)")
    with pytest.raises(ModelError, match="not a usable file name"):
        resolve_model(long)
