from pathlib import Path

import pytest

from crag_cli.settings import Settings, SettingsError, load_settings, write_config, read_config


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
    cfg.write_text("[crag]\nweb = \"searxng\"\nsearxng_url = \"http://127.0.0.1:8888/\"\nrewrite = false\n")
    s = load_settings({}, env={"CRAG_CONFIG": str(cfg)}, cwd=tmp_path)
    assert s.web == "searxng" and s.rewrite is False and s.searxng_url == "http://127.0.0.1:8888"


@pytest.mark.parametrize(
    "env, message",
    [({"CRAG_TOP_K": "ten"}, "bad value 'ten' for top_k .from environment variable CRAG_TOP_K.: input should be a valid integer"),
     ({"CRAG_REWRITE": "maybe"}, "for rewrite .from environment variable CRAG_REWRITE.: input should be a valid boolean")],
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
