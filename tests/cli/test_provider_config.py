"""The providers' settings in the configuration file: ``[providers] default`` and one table per
provider, checked as strictly as the rest of the file, merged flag > environment > file >
default with every source kept, and used by ``nr-llm run`` on the wire (a real HTTP server on
127.0.0.1 capturing the request)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core import ConfigurationError
from nr_llm_core.cli import main
from nr_llm_core.config import Source, load_config
from tests.loop._wire import WireServer
from tests.loop.test_openai_wire import text_reply

from ._probe import write_user_config

DEFAULT = Source("default", "default")


@pytest.fixture(autouse=True)
def _no_installed_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")


def test_without_a_file_each_provider_has_its_defaults() -> None:
    config = load_config()
    chosen = config.provider()
    assert (chosen.name, chosen.chosen_by) == ("scripted", DEFAULT)
    assert dict(chosen.settings).keys() == {"trust_zone"}
    assert chosen["trust_zone"] == "local"
    openai = config.provider("openai")
    assert openai["model"] == "gpt-4o-mini"
    assert openai["base_url"] == "https://api.openai.com/v1"
    assert (openai["trust_zone"], openai["max_tokens"], openai["timeout"]) == (
        "external",
        4096,
        60.0,
    )
    assert all(openai.source(name) == DEFAULT for name in openai.settings)
    assert config.provider("anthropic")["base_url"] == "https://api.anthropic.com"


def test_the_file_chooses_the_provider_and_its_settings() -> None:
    path = write_user_config(
        '[providers]\ndefault = "openai"\n'
        '[providers.openai]\nmodel = "llama3.1"\nbase_url = "http://localhost:11434/v1"\n'
        'trust_zone = "local"\nmax_tokens = 512\ntimeout = 7.5\n'
    )
    config = load_config()
    chosen = config.provider()
    in_file = Source("file", str(path))
    assert (chosen.name, chosen.chosen_by) == ("openai", in_file)
    assert (chosen["model"], chosen["base_url"], chosen["trust_zone"]) == (
        "llama3.1",
        "http://localhost:11434/v1",
        "local",
    )
    assert (chosen["max_tokens"], chosen["timeout"]) == (512, 7.5)
    assert {chosen.source(name) for name in chosen.settings} == {in_file}
    # The other providers keep their defaults.
    assert config.provider("anthropic")["model"] == "claude-3-5-sonnet-latest"


def test_flag_over_environment_over_file_over_default(monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_user_config('[providers.openai]\nbase_url = "http://file.example/v1"\n')
    in_file = Source("file", str(path))
    config = load_config()
    assert config.provider("openai").source("base_url") == in_file
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.example/v1")
    config = load_config()
    openai = config.provider("openai")
    assert (openai["base_url"], openai.source("base_url")) == (
        "http://env.example/v1",
        Source("env", "OPENAI_BASE_URL"),
    )
    flagged = config.provider("openai", base_url="http://flag.example/v1", model=None)
    assert (flagged["base_url"], flagged.source("base_url")) == (
        "http://flag.example/v1",
        Source("flag", "--base-url"),
    )
    # A flag that was not given (None) leaves the setting and its source alone.
    assert flagged.source("model") == DEFAULT
    # OPENAI_BASE_URL is the OpenAI provider's, not Anthropic's.
    assert config.provider("anthropic")["base_url"] == "https://api.anthropic.com"


def test_a_flag_the_scripted_provider_has_no_setting_for_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="--model is for the openai and anthropic"):
        load_config().provider("scripted", model="gpt-4o")
    out = CliRunner().invoke(main, ["run", "hi", "--max-tokens", "5"])
    assert out.exit_code == 2
    assert "--max-tokens is for the openai and anthropic providers" in out.output


OPENAI = r"\[providers.openai\]"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[providers.openai]\nmodle = 'x'\n",
            rf"unknown key 'modle' in {OPENAI} \(did you mean 'model'",
        ),
        ("[openai]\n", r"unknown section 'openai' \(did you mean \[providers.openai\]\?\)"),
        ("[providers.openia]\n", r"unknown table \[providers.openia\] \(did you mean 'openai'"),
        ("[providers.ollama]\n", r"unknown table \[providers.ollama\] \(the tables here are "),
        ("[providers]\nopenai = 'x'\n", rf"\[providers\] openai must be a {OPENAI} table"),
        ("[providers]\ndefault = 'ollama'\n", r"\[providers\] default must be one of scripted, "),
        ("[providers.openai]\ntrust_zone = 'in'\n", rf"{OPENAI} trust_zone must be one of local, "),
        (
            "[providers.openai]\nmax_tokens = 0\n",
            rf"{OPENAI} max_tokens must be a whole number >= 1",
        ),
        ("[providers.openai]\nmax_tokens = 1.5\n", rf"{OPENAI} max_tokens must be a whole number"),
        ("[providers.openai]\ntimeout = 0\n", rf"{OPENAI} timeout must be seconds > 0"),
        (
            "[providers.anthropic]\nmodel = ''\n",
            r"\[providers.anthropic\] model must be a non-empty",
        ),
        ("[providers.openai]\nbase_url = 5\n", rf"{OPENAI} base_url must be a non-empty string"),
        ("[providers.scripted]\nmodel = 'x'\n", r"unknown key 'model' in \[providers.scripted\]"),
    ],
)
def test_a_bad_provider_setting_is_refused_naming_the_file_and_the_key(
    text: str, message: str
) -> None:
    path = write_user_config(text)
    with pytest.raises(ConfigurationError, match=f"^{path}: {message}"):
        load_config()


def test_run_sends_what_the_file_says(tmp_path: Path) -> None:
    """No flag at all: the provider, its model and its answer limit come from the file, and
    reach the wire."""
    with WireServer([text_reply("from the file")]) as server:
        write_user_config(
            '[providers]\ndefault = "openai"\n'
            f'[providers.openai]\nmodel = "file-model"\nbase_url = "{server.url}/v1"\n'
            "max_tokens = 321\n"
        )
        out = CliRunner().invoke(main, ["run", "hi", "--no-record"])
    assert out.exit_code == 0, out.output
    assert "from the file" in out.output
    sent = server.requests[0].json()
    assert (sent["model"], sent["max_tokens"]) == ("file-model", 321)


def test_run_flags_win_over_the_file() -> None:
    with WireServer([text_reply("ok")]) as server:
        write_user_config(
            '[providers]\ndefault = "anthropic"\n'
            '[providers.openai]\nmodel = "file-model"\nbase_url = "http://127.0.0.1:1/v1"\n'
            "max_tokens = 321\n"
        )
        args = ["run", "hi", "--no-record", "--provider", "openai", "--model", "flag-model"]
        out = CliRunner().invoke(main, [*args, "--base-url", f"{server.url}/v1"])
    assert out.exit_code == 0, out.output
    sent = server.requests[0].json()
    assert (sent["model"], sent["max_tokens"]) == ("flag-model", 321)


def test_a_bad_base_url_in_the_file_names_the_file_and_sends_nothing() -> None:
    path = write_user_config('[providers.openai]\nbase_url = "localhost:8080/v1?key=sk-CANARY"\n')
    out = CliRunner().invoke(main, ["run", "hi", "--provider", "openai", "--no-record"])
    assert out.exit_code == 2, out.output
    assert f"{path}: [providers.openai] base_url" in out.output
    assert "must start with http:// or https://" in out.output
    assert "CANARY" not in out.output
    assert "Traceback" not in out.output


def test_config_show_lists_the_provider_settings_without_url_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A base URL may hold credentials or a key in its query (it is refused when a provider
    is built, but the listing shows what is set): only scheme://host[:port]/path is shown."""
    path = write_user_config(
        '[providers.anthropic]\nbase_url = "https://user:sk-CANARY-1@llm.example/api?k=CANARY-2"\n'
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "http://u:CANARY-3@env.example/v1#CANARY-4")
    out = CliRunner().invoke(main, ["config", "show"])
    assert out.exit_code == 0, out.output
    assert "CANARY" not in out.output
    rows = {line.split()[0]: line.split()[1:] for line in out.output.splitlines()[3:]}
    assert rows["providers.anthropic.base_url"] == ["https://llm.example/api", "file", str(path)]
    assert rows["providers.openai.base_url"] == ["http://env.example/v1", "env", "OPENAI_BASE_URL"]
    assert rows["providers.default"] == ["scripted", "default"]
