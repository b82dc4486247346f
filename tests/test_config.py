"""Configuration: defaults, validation that names the key, loading niceeval.config.py and .env."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from niceeval import ConfigError, define_config
from niceeval._eval.config import find_root, load_config


def test_a_project_without_config_gets_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert (config.evals, config.concurrency, config.judge.default_threshold) == (["evals"], 8, None)


def test_an_unknown_key_is_named_with_a_fix() -> None:
    with pytest.raises(ConfigError, match="unknown key 'concurency'; remove it or check its spelling"):
        define_config(concurency=3)


def test_a_bad_value_names_the_key_and_the_value() -> None:
    with pytest.raises(ConfigError, match=r"concurrency: .*greater than or equal to 1.*got 0"):
        define_config(concurrency=0)


def test_a_judge_threshold_outside_zero_to_one_is_rejected() -> None:
    with pytest.raises(ConfigError, match="judge.default_threshold"):
        define_config(judge={"default_threshold": 1.5})


def test_config_is_loaded_from_the_project_root(tmp_path: Path) -> None:
    (tmp_path / "niceeval.config.py").write_text(
        "from niceeval import define_config\nconfig = define_config(concurrency=3)\n"
    )
    (tmp_path / "sub").mkdir()
    assert find_root(tmp_path / "sub") == tmp_path
    assert load_config(tmp_path).concurrency == 3


def test_a_config_file_that_raises_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "niceeval.config.py").write_text("x = 1\nraise RuntimeError('no db')\n")
    with pytest.raises(ConfigError, match=r"niceeval.config.py:2: .*raised RuntimeError: no db"):
        load_config(tmp_path)


def test_a_config_file_without_config_says_what_to_write(tmp_path: Path) -> None:
    (tmp_path / "niceeval.config.py").write_text("x = 1\n")
    with pytest.raises(ConfigError, match="write `config = define_config"):
        load_config(tmp_path)


def test_dotenv_fills_missing_credentials_without_overriding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NICEEVAL_TEST_SET", "from-env")
    monkeypatch.delenv("NICEEVAL_TEST_NEW", raising=False)
    (tmp_path / ".env").write_text("NICEEVAL_TEST_SET=from-file\nNICEEVAL_TEST_NEW=from-file\n")
    load_config(tmp_path)
    assert os.environ["NICEEVAL_TEST_SET"] == "from-env"
    assert os.environ.pop("NICEEVAL_TEST_NEW") == "from-file"
