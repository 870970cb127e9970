"""``[isolation.tool_env]`` in the configuration file: the variables only one isolated tool's
worker sees, which ``IsolationPolicy(tool_env=...)`` gave in Python alone.

Real ``nr-llm`` commands with the builtin ``get_env_raw`` and ``get_env`` (one distribution,
nr-llm) isolated in real worker processes: the tool the file names reads its variable, the
other tool of the same distribution, in the same command, does not. The file holds variable
names only; their values stay in the environment and are printed by no command.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nr_llm_core.cli import main
from nr_llm_core.config import load_config

VALUE = "https://acme.internal/api-CANARY-51d0"
ISOLATED = '[isolation]\ntools = ["get_env_raw", "get_env"]\n'
TOOL_ENV = '[isolation.tool_env]\nget_env_raw = ["ACME_SERVICE_URL"]\n'


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    os.chmod(path, 0o600)
    return path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ACME_SERVICE_URL", VALUE)
    monkeypatch.setenv("NR_LLM_ENABLE_TOOLS", "get_env_raw")
    monkeypatch.chdir(tmp_path)


def read_both(tmp_path: Path, config: Path) -> Result:
    """One ``nr-llm run`` whose model asks both tools for the variable in one turn."""
    ask = {"name": "ACME_SERVICE_URL"}
    turn = {
        "content": "Reading it twice.",
        "tool_calls": [
            {"name": "get_env_raw", "arguments": ask, "id": "raw"},
            {"name": "get_env", "arguments": ask, "id": "masked"},
        ],
    }
    script = tmp_path / "script.json"
    script.write_text(json.dumps([turn, "Read."]))
    return invoke("run", "read it", "--script", str(script), "--config", str(config))


def tool_lines(output: str) -> dict[str, str]:
    lines = [line.strip() for line in output.splitlines() if " tool " in line]
    return {line.split()[2].rstrip(":"): line for line in lines}


@pytest.mark.usefixtures("environment")
def test_the_named_tool_s_worker_sees_its_variable_and_the_other_tool_s_does_not(
    tmp_path: Path,
) -> None:
    config = config_file(tmp_path, ISOLATED + TOOL_ENV)
    listed = invoke("tools", "list", "--json", "--config", str(config))
    rows = {row["name"]: row for row in json.loads(listed.output)}
    assert rows["get_env_raw"]["isolated"] and rows["get_env"]["isolated"]
    out = read_both(tmp_path, config)
    assert out.exit_code == 0, out.output
    lines = tool_lines(out.output)
    assert f"ACME_SERVICE_URL={VALUE}" in lines["get_env_raw"], out.output
    assert "get_env (error): Environment variable not set: ACME_SERVICE_URL" in lines["get_env"]


@pytest.mark.usefixtures("environment")
def test_without_the_key_no_worker_sees_the_variable(tmp_path: Path) -> None:
    """The control: the same tools isolated without ``tool_env`` read nothing; in-process,
    both read the variable."""
    lines = tool_lines(read_both(tmp_path, config_file(tmp_path, ISOLATED)).output)
    assert "not set: ACME_SERVICE_URL" in lines["get_env_raw"]
    assert "not set: ACME_SERVICE_URL" in lines["get_env"]
    in_process = tool_lines(read_both(tmp_path, config_file(tmp_path, TOOL_ENV)).output)
    assert VALUE in in_process["get_env_raw"] and "not set" not in in_process["get_env"]


@pytest.mark.usefixtures("environment")
def test_config_show_names_the_variables_and_never_their_values(tmp_path: Path) -> None:
    config = config_file(tmp_path, ISOLATED + TOOL_ENV)
    out = invoke("config", "show", "--config", str(config))
    assert out.exit_code == 0, out.output
    row = next(line for line in out.output.splitlines() if line.startswith("isolation.tool_env"))
    assert "get_env_raw: ACME_SERVICE_URL" in row and f"file {config}" in row
    assert VALUE not in out.output and "CANARY" not in out.output
    plain = invoke("config", "show", "--config", str(config_file(tmp_path, ISOLATED)))
    row = next(line for line in plain.output.splitlines() if line.startswith("isolation.tool_env"))
    assert row.split()[1:] == ["-", "default"]


def test_the_python_api_reads_the_same_key(tmp_path: Path) -> None:
    text = '[isolation.tool_env]\nmy_tool = ["MY_TOOL_URL", "MY_TOOL_MODE"]\nother = []\n'
    policy = load_config(config_file(tmp_path, text)).host_options()["isolate"]
    assert dict(policy.tool_env) == {
        "my_tool": frozenset({"MY_TOOL_URL", "MY_TOOL_MODE"}),
        "other": frozenset(),
    }
    assert policy.env_names("my_tool", "some-dist") == {"MY_TOOL_URL", "MY_TOOL_MODE"}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[isolation]\ntool_env = 3\n", "must be a table of tool names"),
        ('[isolation.tool_env]\nmy_tool = "MY_VAR"\n', "my_tool must be a list"),
        ('[isolation.tool_env]\nmy_tool = ["MY VAR"]\n', "'MY VAR' is not a variable name"),
        ("[isolation.tool_env]\nmy_tool = [1]\n", "must be a list of variable names"),
        ('[isolation.tool_env]\n"bad tool!" = ["X"]\n', "'bad tool!' is not a tool name"),
        (
            '[isolation.tool_env]\nmy_tool = ["ACME_API_KEY"]\n',
            "'ACME_API_KEY' looks like a secret",
        ),
        ('[isolation.tool_env]\nmy_tool = ["DB_PASSWORD"]\n', "'DB_PASSWORD' looks like a secret"),
        ("[isolation]\ntool_envs = {}\n", "did you mean 'tool_env'"),
    ],
)
def test_a_wrong_value_is_refused_naming_the_file_and_the_key(
    tmp_path: Path, text: str, says: str
) -> None:
    config = config_file(tmp_path, text)
    out = invoke("config", "show", "--config", str(config))
    assert out.exit_code == 2, out.output
    message = " ".join(out.output.split())
    assert says in message and str(config) in message, message
