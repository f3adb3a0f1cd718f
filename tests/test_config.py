"""The one config resolver: flag > RLFORGE_* env > rlforge.toml > default."""

from __future__ import annotations

import json

import pytest

from rlforge.config import SETTINGS, Config, render_default_file
from rlforge.errors import ConfigError


def test_precedence_flag_env_file_default(tmp_path):
    (tmp_path / "rlforge.toml").write_text('[run]\nconcurrency = 3\nmodel = "from-file"\n')
    cfg = Config.load(env={"RLFORGE_RUN_MODEL": "from-env"})
    assert cfg.resolve("run.concurrency") == (3, "file rlforge.toml")
    assert cfg.resolve("run.model") == ("from-env", "env RLFORGE_RUN_MODEL")
    assert cfg.resolve("run.model", flag="from-flag") == ("from-flag", "flag")
    assert cfg.resolve("run.samples") == (1, "default")


def test_env_values_are_typed_and_bad_ones_are_user_errors():
    cfg = Config.load(env={"RLFORGE_RUN_CONCURRENCY": "12", "RLFORGE_REDACT": "off",
                           "RLFORGE_RUN_TEMPERATURE": "warm"})
    assert cfg.get("run.concurrency") == 12
    assert cfg.get("redact") is False
    with pytest.raises(ConfigError, match="run.temperature.*RLFORGE_RUN_TEMPERATURE"):
        cfg.get("run.temperature")


def test_choices_are_enforced(tmp_path):
    (tmp_path / "rlforge.toml").write_text('[sandbox]\nmode = "docker"\n')
    with pytest.raises(ConfigError, match="not one of bwrap, none"):
        Config.load().get("sandbox.mode")


def test_dict_setting_from_file_and_env(tmp_path):
    (tmp_path / "rlforge.toml").write_text('[ingest.tickets.mapping]\nbody = "instruction"\n')
    assert Config.load(env={}).get("ingest.tickets.mapping") == {"body": "instruction"}
    env = {"RLFORGE_INGEST_TICKETS_MAPPING": json.dumps({"body": "text"})}
    assert Config.load(env=env).get("ingest.tickets.mapping") == {"body": "text"}


def test_invalid_toml_and_missing_explicit_file(tmp_path):
    (tmp_path / "rlforge.toml").write_text("this is = = not toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        Config.load()
    with pytest.raises(ConfigError, match="does not exist"):
        Config.load(tmp_path / "nope.toml")


def test_default_file_round_trips_and_lists_every_setting(tmp_path):
    text = render_default_file()
    for s in SETTINGS:
        assert s.env in text
    # Uncommenting every line must give a valid file that resolves to the defaults.
    uncommented = "\n".join(line[2:] if line.startswith("# ") and " = " in line and
                            not line.startswith("# rlforge") and "env RLFORGE" not in line
                            else line for line in text.splitlines())
    (tmp_path / "rlforge.toml").write_text(uncommented)
    cfg = Config.load(env={})
    for s in SETTINGS:
        value, source = cfg.resolve(s.key)
        assert value == s.default, s.key
        assert source.startswith("file"), s.key
    assert cfg.unknown_file_keys() == []


def test_secret_is_read_by_name_and_masked():
    cfg = Config.load(env={"RLFORGE_RUN_API_KEY_ENV": "MY_KEY", "MY_KEY": "sk-test-abcdefghijklmnop"})
    assert cfg.secret_from_env("run.api_key_env") == "sk-test-abcdefghijklmnop"
    shown = json.dumps(cfg.explain())
    assert "abcdefghijklmnop" not in shown
    assert "MY_KEY" in shown


def test_cli_init_and_config_show(cli, tmp_path, monkeypatch):
    result = cli("init")
    assert result.exit_code == 0 and (tmp_path / "rlforge.toml").exists()
    again = cli("init")
    assert again.exit_code == 1 and "--force" in again.output
    monkeypatch.setenv("RLFORGE_RUN_CONCURRENCY", "5")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-secretsecretsecret")
    shown = cli("config", "show", "--json")
    assert shown.exit_code == 0
    data = json.loads(shown.output)
    by_key = {r["key"]: r for r in data["settings"]}
    assert by_key["run.concurrency"]["value"] == 5
    assert by_key["run.concurrency"]["source"] == "env RLFORGE_RUN_CONCURRENCY"
    assert "secretsecret" not in shown.output
    assert by_key["db"]["source"] == "env RLFORGE_DB"


def test_config_show_warns_about_unknown_keys(cli, tmp_path):
    (tmp_path / "rlforge.toml").write_text('[run]\nconcurency = 3\n')
    result = cli("config", "show")
    assert result.exit_code == 0
    assert "unknown key 'run.concurency'" in result.output


def test_every_setting_is_one_field_of_one_typed_section():
    from dataclasses import fields

    from rlforge.config import Settings

    sections = [f.name for f in fields(Settings) if f.name not in ("env", "sources")]
    keys = []
    for name in sections:
        cls = type(getattr(Settings(), name))
        keys += [(f"{cls.prefix}." if cls.prefix else "") + f.name
                 for f in fields(cls) if f.name != "given"]
    assert sorted(keys) == sorted(s.key for s in SETTINGS)  # each key once, no other field
    defaults = Settings()
    for s in SETTINGS:
        prefix, _, leaf = s.key.rpartition(".")
        section = next(getattr(defaults, n) for n in sections
                       if type(getattr(defaults, n)).prefix == prefix)
        assert getattr(section, leaf) == s.default, s.key


def test_typed_settings_hold_the_resolved_values_and_their_sources(tmp_path):
    (tmp_path / "rlforge.toml").write_text('[sandbox]\nmemory_mb = 512\n[tasks.repair]\nlast = 7\n')
    cfg = Config.load(env={"RLFORGE_RUN_SAMPLES": "4"}).with_flags(run__model="m")
    settings = cfg.settings()
    assert (settings.run.samples, settings.run.model, settings.run.seed) == (4, "m", 0)
    assert (settings.sandbox.memory_mb, settings.repair.last) == (512, 7)
    assert settings.run.given == {"samples", "model"} and settings.sandbox.given == {"memory_mb"}
    assert settings.record()["run.samples"] == {"value": 4, "source": "env RLFORGE_RUN_SAMPLES"}
    assert list(settings.record()) == [s.key for s in SETTINGS]
    for s in SETTINGS:
        assert settings.record()[s.key]["value"] == cfg.get(s.key)
# --- executors: named in the config, known to rlforge.execution ----------------------------

def test_executor_settings_name_every_backend():
    from rlforge.execution import BACKENDS

    for key in ("run.executor", "tasks.executor"):
        help_text = next(s.help for s in SETTINGS if s.key == key)
        assert all(name in help_text for name in BACKENDS), (key, help_text)


def test_an_unknown_executor_is_refused_where_it_came_from(tmp_path):
    from rlforge.execution import choose

    env = {"RLFORGE_RUN_EXECUTOR": "nope"}
    with pytest.raises(ConfigError) as caught:
        choose(Config.load(env=env), "run.executor")
    assert str(caught.value) == ("run.executor from RLFORGE_RUN_EXECUTOR: 'nope' is not one of "
                                 "local, ray")
    (tmp_path / "rlforge.toml").write_text('[tasks]\nexecutor = "spark"\n')
    with pytest.raises(ConfigError, match="tasks.executor from rlforge.toml: 'spark' is not "
                                          "one of local, ray"):
        choose(Config.load(env={}), "tasks.executor")


@pytest.mark.parametrize("command", ["run", "validate"])
def test_a_command_given_an_unknown_executor_fails_in_one_line(cli, tmp_path, command):
    from test_run_support import label_task

    label_task(tmp_path / "tasks", "a", "billing")
    result = cli(command, tmp_path / "tasks", "--executor", "nope")
    setting = "run.executor" if command == "run" else "tasks.executor"
    assert result.exit_code == 1, result.output
    assert f"{setting} from flag: 'nope' is not one of local, ray" in result.stderr
    assert "Traceback" not in result.output
