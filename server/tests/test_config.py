"""Settings: env parsing, one-line failures at start, and docs that list every setting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cortadel_server.config import SETTINGS, Settings
from cortadel_server.errors import ConfigError

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_defaults_serve_as_is() -> None:
    settings = Settings.from_env({})
    assert (settings.host, settings.port, settings.data) == ("127.0.0.1", 3001, "./data/cortadel.db")
    assert settings.embedder == "wordllama" and settings.extractor == "rules" and settings.auth_secret is None


def test_env_and_overrides() -> None:
    settings = Settings.from_env({"CORTADEL_PORT": "4000", "CORTADEL_LOG_FORMAT": "JSON"}, port=5000)
    assert settings.port == 5000 and settings.log_format == "json"
    assert Settings.from_env({"CORTADEL_DATABASE_URL": "sqlite:////tmp/x.db"}).database_path == Path("/tmp/x.db")
    assert Settings.from_env({"CORTADEL_DATABASE_URL": "sqlite:///rel/x.db"}).database_path == Path("rel/x.db")


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"CORTADEL_PORT": "eighty"}, "CORTADEL_PORT"),
        ({"CORTADEL_PORT": "70000"}, "CORTADEL_PORT"),
        ({"CORTADEL_EMBEDDER": "bert"}, "CORTADEL_EMBEDDER"),
        ({"CORTADEL_EMBEDDER": "openai"}, "CORTADEL_EMBEDDER_URL"),
        ({"CORTADEL_EMBEDDER": "onnx"}, "CORTADEL_EMBEDDER_MODEL"),
        ({"CORTADEL_EXTRACTOR": "llm"}, "CORTADEL_LLM_URL"),
        ({"CORTADEL_ALLOW_DIM_MISMATCH": "perhaps"}, "CORTADEL_ALLOW_DIM_MISMATCH"),
        ({"CORTADEL_DATABASE_URL": "mysql://x"}, "CORTADEL_DATABASE_URL"),
    ],
)
def test_bad_settings_name_themselves(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env)
    assert str(info.value).startswith(named)


def test_bad_setting_stops_serve_with_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cortadel_server", "serve", "--data", str(tmp_path / "c.db")],
        env={"CORTADEL_LOG_LEVEL": "loud", "PATH": ""}, capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "cortadel: CORTADEL_LOG_LEVEL='loud': must be one of debug, info, warning, error"


def test_docs_list_every_setting() -> None:
    text = DOCS.read_text(encoding="utf-8")
    documented = {line.split("`")[1] for line in text.splitlines() if line.startswith("| `CORTADEL_")}
    assert documented == {s.env for s in SETTINGS}
    for setting in SETTINGS:
        row = next(line for line in text.splitlines() if line.startswith(f"| `{setting.env}`"))
        default = "unset" if setting.default is None else f"`{str(setting.default).lower() if isinstance(setting.default, bool) else setting.default}`"
        assert f"| {default} |" in row, setting.env


def test_every_setting_is_a_settings_field_with_its_default_written_once() -> None:
    import dataclasses

    assert [s.name for s in SETTINGS] == [f.name for f in dataclasses.fields(Settings)]
    assert {s.name: s.default for s in SETTINGS} == {f.name: f.default for f in dataclasses.fields(Settings)}
