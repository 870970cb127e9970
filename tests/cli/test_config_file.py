"""The configuration file: which one is read, what it may say, how it merges with the
environment and the flags, and where each value came from."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core import ConfigurationError, ToolHost
from nr_llm_core.cli import main
from nr_llm_core.config import Source, config_file_path, load_config, user_config_path

from ._probe import write_probe_site, write_user_config


def file_source(path: Path) -> Source:
    return Source("file", str(path))


def test_without_a_file_every_setting_is_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NR_LLM_DB")  # set for every test (tests/conftest.py): a store, not a file
    config = load_config()
    assert config.file is None and config.file_source is None
    assert config.tool_timeout == 30.0
    assert config["isolation.tools"] == frozenset()
    assert all(s.sources == (Source("default", "default"),) for s in config.settings.values())
    policy = config.isolation_policy()
    assert not policy.isolates_anything()
    assert (policy.timeout, policy.memory_bytes, policy.cpu_seconds) == (30.0, 1 << 30, 60)


def test_the_user_file_is_found_in_the_user_config_dir() -> None:
    path = write_user_config('[tools]\ntimeout = 5\nblock = ["a"]\n')
    assert user_config_path() == path == config_file_path()
    config = load_config()
    assert config.file == path and config.file_source == Source("default", "default")
    assert config.tool_timeout == 5.0
    assert config.sources("tools.timeout") == (file_source(path),)
    assert config["tools.block"] == {"a"}


def test_nr_llm_config_replaces_the_user_file_and_the_flag_replaces_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_user_config("[tools]\ntimeout = 5\n")
    named = tmp_path / "named.toml"
    named.write_text("[tools]\ntimeout = 6\n")
    flagged = tmp_path / "flagged.toml"
    flagged.write_text("[isolation]\neverything = true\n")
    monkeypatch.setenv("NR_LLM_CONFIG", str(named))
    config = load_config()
    assert (config.file, config.file_source) == (named, Source("env", "NR_LLM_CONFIG"))
    assert config.tool_timeout == 6.0
    config = load_config(flagged)
    assert (config.file, config.file_source) == (flagged, Source("flag", "--config"))
    # Exactly one file is read: nothing of the other two.
    assert config.tool_timeout == 30.0
    assert config["isolation.everything"] is True


def test_a_named_file_that_does_not_exist_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "missing.toml"
    with pytest.raises(ConfigurationError, match=f"{missing}: cannot read"):
        load_config(missing)
    monkeypatch.setenv("NR_LLM_CONFIG", str(missing))
    with pytest.raises(ConfigurationError, match=f"{missing}: cannot read"):
        load_config()


def test_a_file_in_the_working_directory_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checked-out repository cannot choose what this process runs in-process."""
    for name in ("nr-llm.toml", "config.toml", ".nr-llm.toml"):
        (tmp_path / name).write_text("[isolation]\nthis_is_not_read = 1\n")
    (tmp_path / ".nr-llm").mkdir()
    (tmp_path / ".nr-llm" / "config.toml").write_text("[isolation]\nnot_read = 1\n")
    monkeypatch.chdir(tmp_path)
    assert load_config().file is None


def test_precedence_is_flag_then_environment_then_file_then_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_user_config("[tools]\ntimeout = 5\n")
    assert load_config().sources("tools.timeout") == (file_source(path),)
    monkeypatch.setenv("NR_LLM_TOOL_TIMEOUT", "7")
    config = load_config()
    assert config.tool_timeout == 7.0
    assert config.sources("tools.timeout") == (Source("env", "NR_LLM_TOOL_TIMEOUT"),)
    config = load_config(tool_timeout=0)
    assert config.tool_timeout is None  # 0: no limit
    assert config.sources("tools.timeout") == (Source("flag", "--tool-timeout"),)


def test_name_lists_are_the_union_of_every_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """A flag adds to what the file blocks or isolates; it never takes a name away."""
    path = write_user_config(
        '[tools]\nblock = ["from_file"]\n[isolation]\ndistributions = ["dist-file"]\n'
    )
    monkeypatch.setenv("NR_LLM_BLOCK_TOOLS", "from_env, also_env")
    monkeypatch.setenv("NR_LLM_ISOLATE", "env_tool")
    config = load_config(block=["from_flag"], isolate=["flag_tool"])
    assert config["tools.block"] == {"from_file", "from_env", "also_env", "from_flag"}
    assert config.sources("tools.block") == (
        Source("flag", "--block"),
        Source("env", "NR_LLM_BLOCK_TOOLS"),
        file_source(path),
    )
    policy = config.isolation_policy()
    for name in ("flag_tool", "env_tool"):
        assert policy.covers(name, None)
    assert policy.covers("anything", "Dist_File")  # distributions compare the PEP 503 way
    assert not policy.covers("anything", "other")
    assert load_config(isolate=["*"]).isolation_policy().everything


def test_the_isolation_limits_come_from_the_file() -> None:
    write_user_config(
        "[isolation]\ntools = ['t']\ntimeout = 12.5\nmemory_mb = 256\ncpu_seconds = 0\n"
        "[tools]\ntimeout = 3\n"
    )
    policy = load_config().isolation_policy()
    assert policy.tools == {"t"}
    assert (policy.timeout, policy.memory_bytes, policy.cpu_seconds) == (12.5, 256 << 20, None)
    # Without its own, an isolated call gets the tools' timeout; with none at all, 30 s.
    write_user_config("[tools]\ntimeout = 3\n")
    assert load_config().isolation_policy().timeout == 3.0
    write_user_config("[tools]\ntimeout = 0\n")
    assert load_config().isolation_policy().timeout == 30.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[isolaton]\n", r"unknown section 'isolaton' \(did you mean 'isolation'\?\)"),
        ("[models]\n", r"unknown section 'models'"),
        ("timeout = 3\n", r"'timeout' is not in a section \(\[isolation\] or \[tools\] or "),
        ("tools = 3\n", r"'tools' must be a \[tools\] table"),
        (
            '[isolation]\ndistribution = ["x"]\n',
            r"unknown key 'distribution' in \[isolation\] \(did you mean 'distributions'\?\)",
        ),
        ("[isolation]\nnames = ['x']\n", r"unknown key 'names' in \[isolation\]"),
        # A provider's key written straight under [providers] (a newcomer pass): where it goes.
        (
            '[providers]\nbase_url = "http://127.0.0.1:8080/v1"\n',
            r"unknown key 'base_url' in \[providers\] \(it belongs in \[providers\.openai\] or "
            r"\[providers\.anthropic\]\)",
        ),
        ('[tools]\ntimeout = "30"\n', r"\[tools\] timeout must be a number of seconds >= 0"),
        ("[tools]\ntimeout = true\n", r"\[tools\] timeout must be a number of seconds >= 0"),
        ("[tools]\ntimeout = -1\n", r"\[tools\] timeout must be a number of seconds >= 0"),
        ("[tools]\ntimeout = inf\n", r"\[tools\] timeout must be a number of seconds >= 0"),
        ("[isolation]\ntimeout = 0\n", r"\[isolation\] timeout must be seconds > 0"),
        ('[tools]\nblock = "a,b"\n', r"\[tools\] block must be a list of names"),
        ('[tools]\nblock = ["a", ""]\n', r"\[tools\] block must be a list of names"),
        ('[tools]\nblock = ["a", 1]\n', r"\[tools\] block must be a list of names"),
        (
            '[isolation]\ntools = ["*"]\n',
            r"\[isolation\] tools: '\*' is not a name \(use everything = true\)",
        ),
        ('[isolation]\neverything = "yes"\n', r"\[isolation\] everything must be true or false"),
        ("[isolation]\nmemory_mb = -1\n", r"\[isolation\] memory_mb must be a whole number >= 0"),
        (
            "[isolation]\ncpu_seconds = 1.5\n",
            r"\[isolation\] cpu_seconds must be a whole number >= 0",
        ),
        ("[tools\n", r"not valid TOML: .*line 1"),
    ],
)
def test_a_bad_file_is_refused_naming_the_file_and_the_key(text: str, message: str) -> None:
    path = write_user_config(text)
    with pytest.raises(ConfigurationError, match=f"^{path}: {message}"):
        load_config()


def test_a_file_that_is_not_utf8_is_refused() -> None:
    path = write_user_config("")
    path.write_bytes(b"[tools]\nblock = ['\xff']\n")
    with pytest.raises(ConfigurationError, match="not UTF-8 text"):
        load_config()


def test_a_bad_environment_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NR_LLM_TOOL_TIMEOUT", "soon")
    with pytest.raises(ConfigurationError, match=r"^NR_LLM_TOOL_TIMEOUT must be a number"):
        load_config()


def test_the_host_built_from_the_options_honours_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedding API reads the same settings: ToolHost.discover(**host_options())."""
    monkeypatch.syspath_prepend(str(write_probe_site(tmp_path / "site")))
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("NR_LLM_PLUGINS", "probe,probe_gated,probe_nap")
    write_user_config(
        '[tools]\ntimeout = 4\nblock = ["probe_nap"]\ndisable = ["probe_gated"]\n'
        '[isolation]\ntools = ["probe"]\n'
    )
    with ToolHost.discover(**load_config().host_options()) as host:
        assert host.names() == ["probe", "probe_gated"]
        assert host.is_isolated("probe") and not host.is_isolated("probe_gated")
        assert not host.is_enabled("probe_gated")
        assert host.timeout == 4.0
        assert f"ppid={os.getpid()} " in host.invoke("probe", {}).content


def test_config_show_lists_each_setting_with_its_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_user_config('[tools]\ntimeout = 5\n[isolation]\ntools = ["t\\u001b[2J"]\n')
    monkeypatch.setenv("NR_LLM_BLOCK_TOOLS", "x")
    out = CliRunner().invoke(main, ["config", "show", "--block", "y", "--isolate", "z"])
    assert out.exit_code == 0, out.output
    rows = {line.split()[0]: line for line in out.output.splitlines()[3:]}
    assert f"config file: {path} (default)" in out.output
    assert rows["tools.timeout"].split()[1:] == ["5", "file", str(path)]
    assert rows["tools.block"].split()[1:] == [
        "x,",
        "y",
        "flag",
        "--block;",
        "env",
        "NR_LLM_BLOCK_TOOLS",
    ]
    assert rows["isolation.names"].split()[1:] == ["z", "flag", "--isolate"]
    assert rows["isolation.memory_mb"].split()[1:] == ["1024", "default"]
    assert "t\\x1b[2J" in rows["isolation.tools"] and "\x1b" not in out.output
    path_out = CliRunner().invoke(main, ["config", "path"])
    assert path_out.output.strip() == str(path)


def test_config_show_names_the_value_a_default_stands_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """The newcomer's reading: ``store.db`` and ``isolation.timeout`` showed ``-`` although a
    command uses a value for each (the audit file in the working directory; the in-process
    limit). The value used is shown, saying where it comes from."""
    monkeypatch.delenv("NR_LLM_DB", raising=False)
    out = CliRunner().invoke(main, ["config", "show", "--tool-timeout", "7"])
    assert out.exit_code == 0, out.output
    rows = {line.split()[0]: line for line in out.output.splitlines()[3:]}
    assert rows["store.db"].split()[1:] == ["./.nr-llm/audit.db", "default"]
    assert rows["isolation.timeout"].split()[1:] == ["7", "(tools.timeout)", "default"]
    off = CliRunner().invoke(main, ["config", "show", "--tool-timeout", "0"])
    rows = {line.split()[0]: line for line in off.output.splitlines()[3:]}
    assert rows["isolation.timeout"].split()[1:] == ["30", "default"]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (None, ["metadata", "default"]),
        ("none", ["none", "env", "NR_LLM_PRIVACY_LEVEL"]),
        ("Full ", ["full", "env", "NR_LLM_PRIVACY_LEVEL"]),
        ("fulll", ["metadata", "(NR_LLM_PRIVACY_LEVEL", "is", "not", "a", "level)", "default"]),
    ],
)
def test_config_show_names_the_privacy_level_and_its_source(
    monkeypatch: pytest.MonkeyPatch, env: str | None, expected: list[str]
) -> None:
    """The most important audit setting was in no row: the level runs are recorded at (only
    NR_LLM_PRIVACY_LEVEL sets it for every command; set, it also caps --privacy). A value
    that is no level means metadata, and the row says so."""
    if env is None:
        monkeypatch.delenv("NR_LLM_PRIVACY_LEVEL", raising=False)
    else:
        monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", env)
    out = CliRunner().invoke(main, ["config", "show"])
    assert out.exit_code == 0, out.output
    rows = {line.split()[0]: line for line in out.output.splitlines()[3:]}
    assert rows["privacy.level"].split()[1:] == expected


@pytest.mark.parametrize(
    "command",
    [
        ["run", "hi"],
        ["runs", "approve", "some-run"],
        ["tools", "list"],
        ["doctor"],
        ["demo"],
        ["playground", "--no-open"],
        ["config", "show"],
    ],
)
def test_every_command_that_runs_tools_refuses_a_bad_file_before_doing_anything(
    command: list[str], tmp_path: Path
) -> None:
    """Exit status 2 and the file and key named, for the user file and for --config."""
    path = write_user_config('[isolation]\ndistribution = ["x"]\n')
    out = CliRunner().invoke(main, command)
    assert out.exit_code == 2, out.output
    assert f"{path}: unknown key 'distribution' in [isolation]" in out.output
    other = tmp_path / "other.toml"
    other.write_text("[tools]\ntimeout = -3\n")
    group, rest = command[:1], command[1:]
    if group == ["tools"]:  # the group's option
        argv = [*group, "--config", str(other), *rest]
    else:
        argv = [*command, "--config", str(other)]
    out = CliRunner().invoke(main, argv)
    assert out.exit_code == 2, out.output
    assert f"{other}: [tools] timeout must be" in out.output


def test_the_documented_example_is_a_valid_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference in docs/operating.md (and the module's docstring) passes the checks."""
    import nr_llm_core.config

    monkeypatch.delenv("NR_LLM_DB")  # set for every test (tests/conftest.py)
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "operating.md").read_text(encoding="utf-8")
    (example,) = [
        block.split("```", 1)[0]
        for block in page.split("```toml\n")[1:]
        if block.startswith("# ~/.config/nr-llm/config.toml")
    ]
    doc = nr_llm_core.config.__doc__ or ""
    in_docstring = doc.split("::\n\n", 1)[1].split("\n\nPrecedence", 1)[0]
    for text in (example, "\n".join(line[4:] for line in in_docstring.splitlines())):
        path = tmp_path / "example.toml"
        path.write_text(text, encoding="utf-8")
        config = load_config(path)
        assert config["isolation.distributions"] == {"nr-llm-git"}
        assert config["tools.block"] == {"get_env_raw"}
        assert all(
            s.sources[0].kind == "file"
            for key, s in config.settings.items()
            if key != "isolation.names"
        )
