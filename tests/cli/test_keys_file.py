"""API keys at rest: ``nr-llm keys set|list|remove|path`` and the one file they manage.

Tried against real processes and a real file: the file is 0600 in a 0700 directory whatever
the umask; a key on the command line is refused without being repeated; a file others can
read, a symbolic link, a file of another user or a directory others can write to is refused
with what to run; the environment wins over the stored key; the adapters send the stored
key when the variable is unset (a real HTTP server on 127.0.0.1 captures the header).
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core import AnthropicProvider, ConfigurationError, OpenAIChatProvider
from nr_llm_core.cli import main
from nr_llm_core.keys import find_key, key_status, keys_path, store_key
from tests.loop._wire import WireServer
from tests.loop.test_openai_wire import text_reply

KEY = "sk-proj-CANARY-stored-3f9e71"
ENV_KEY = "sk-proj-CANARY-env-a04c22"


def nr_llm(*args: str, stdin: str = "", umask: int = 0o022) -> subprocess.CompletedProcess[str]:
    """``nr-llm ARGS`` in a process of its own, with ``stdin`` and ``umask``."""
    return subprocess.run(
        [sys.executable, "-m", "nr_llm_core", *args],
        input=stdin,
        capture_output=True,
        text=True,
        umask=umask,
        timeout=120,
        check=False,
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_the_keys_file_is_0600_in_a_0700_directory_whatever_the_umask(umask: int) -> None:
    done = nr_llm("keys", "set", "openai", stdin=f"{KEY}\n", umask=umask)
    assert done.returncode == 0, done.stderr
    path = keys_path()
    assert (mode(path), mode(path.parent)) == (0o600, 0o700)
    assert json.loads(path.read_text()) == {"OPENAI_API_KEY": KEY}
    assert KEY not in done.stdout + done.stderr
    assert str(path) in done.stdout
    # Written by renaming a new file over the old one: nothing else is left in the directory.
    nr_llm("keys", "set", "anthropic", stdin="sk-ant-second\n", umask=umask)
    assert sorted(p.name for p in path.parent.iterdir()) == ["keys.json"]
    assert mode(path) == 0o600


@pytest.mark.parametrize("extra", [[KEY], ["--value", KEY], [f"--key={KEY}"]])
def test_a_key_on_the_command_line_is_refused_and_not_repeated(extra: list[str]) -> None:
    done = nr_llm("keys", "set", "openai", *extra, stdin=f"{KEY}\n")
    assert done.returncode == 2
    assert "a key is never taken from the command line" in done.stderr
    assert KEY not in done.stdout + done.stderr
    assert not keys_path().exists()


def test_a_key_given_as_the_name_is_not_repeated() -> None:
    for command in (["set", KEY], ["remove", KEY]):
        done = nr_llm("keys", *command, stdin=f"{KEY}\n")
        assert done.returncode == 2
        assert "not a key nr-llm knows: the keys are openai (OPENAI_API_KEY)" in done.stderr
        assert KEY not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("", "no key on stdin"),
        ("\n  \n", "no key on stdin"),
        ("sk-one\nsk-two\n", "stdin holds more than one line"),
        ("sk-a b\n", "holds a space, a control or a non-ASCII character"),
        ("sk-é\n", "holds a space, a control or a non-ASCII character"),
    ],
)
def test_what_is_not_one_key_is_refused(stdin: str, message: str) -> None:
    done = nr_llm("keys", "set", "openai", stdin=stdin)
    assert done.returncode == 1
    assert message in done.stderr
    assert not keys_path().exists()


def test_the_variable_name_is_a_name_too() -> None:
    assert nr_llm("keys", "set", "ANTHROPIC_API_KEY", stdin=KEY).returncode == 0
    assert json.loads(keys_path().read_text()) == {"ANTHROPIC_API_KEY": KEY}


def test_list_and_remove_say_where_each_key_comes_from(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["keys", "set", "openai"], input=KEY).exit_code == 0
    monkeypatch.setenv("ANTHROPIC_API_KEY", ENV_KEY)
    out = runner.invoke(main, ["keys", "list"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0] == f"keys file: {keys_path()}"
    assert lines[3].split() == ["openai", "OPENAI_API_KEY", "keys", "file"]
    assert lines[4].split() == ["anthropic", "ANTHROPIC_API_KEY", "env", "ANTHROPIC_API_KEY"]
    listed = json.loads(runner.invoke(main, ["keys", "list", "--json"]).output)
    assert [(k["name"], k["present"], k["source"], k["stored"]) for k in listed["keys"]] == [
        ("openai", True, "file", True),
        ("anthropic", True, "env", False),
    ]
    out = runner.invoke(main, ["keys", "remove", "openai"])
    assert out.exit_code == 0, out.output
    assert not keys_path().exists()  # the last key removed: no file left
    out = runner.invoke(main, ["keys", "remove", "openai"])
    assert out.exit_code == 1
    assert "no OPENAI_API_KEY key is stored" in out.output
    out = runner.invoke(main, ["keys", "list"])
    assert "none: set OPENAI_API_KEY or run `nr-llm keys set openai`" in out.output
    assert runner.invoke(main, ["keys", "path"]).output == f"{keys_path()}\n"


def test_the_environment_wins_over_the_stored_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one place that reads keys: the argument, else the variable, else the file. Seen on
    the wire, as the header a real server receives."""
    store_key("OPENAI_API_KEY", KEY)
    with WireServer([text_reply("a"), text_reply("b"), text_reply("c")]) as server:
        url = f"{server.url}/v1"
        with OpenAIChatProvider(url, "m") as provider:  # nothing set: the stored key
            provider.complete([], [])
        monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
        with OpenAIChatProvider(url, "m") as provider:  # the variable wins
            provider.complete([], [])
        with OpenAIChatProvider(url, "m", api_key="sk-argument") as provider:
            provider.complete([], [])
    sent = [r.headers["authorization"] for r in server.requests]
    assert sent == [f"Bearer {KEY}", f"Bearer {ENV_KEY}", "Bearer sk-argument"]
    # An empty variable is unset: the stored key is used again.
    monkeypatch.setenv("OPENAI_API_KEY", "")
    assert find_key("OPENAI_API_KEY") == KEY


def test_a_stored_key_satisfies_the_vendors_api_without_a_request() -> None:
    with pytest.raises(ConfigurationError, match="nr-llm keys set anthropic"):
        AnthropicProvider("claude-3-5-sonnet-latest")
    store_key("ANTHROPIC_API_KEY", KEY)
    provider = AnthropicProvider("claude-3-5-sonnet-latest")  # built: no request is made
    assert KEY not in repr(provider)
    provider.close()


def _stored_then(change: str) -> Path:
    store_key("OPENAI_API_KEY", KEY)
    path = keys_path()
    if change == "group-readable":
        path.chmod(0o640)
    elif change == "world-readable":
        path.chmod(0o604)
    elif change == "symlink":
        real = path.with_name("elsewhere.json")
        path.rename(real)
        path.symlink_to(real)
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("group-readable", "can be read by other users (permissions 0640): run `chmod 600 "),
        ("world-readable", "can be read by other users (permissions 0604): run `chmod 600 "),
        ("symlink", "is a symbolic link: nr-llm reads keys only from a regular file there"),
    ],
)
def test_a_keys_file_others_could_read_or_redirect_is_refused(change: str, message: str) -> None:
    """As ssh refuses a private key others can read. A symbolic link is refused too: the
    file is nr-llm's own, and a link could send a new key to a file others can read."""
    path = _stored_then(change)
    with pytest.raises(ConfigurationError, match="^" + re.escape(f"{path} {message}")):
        find_key("OPENAI_API_KEY")
    # Every command that reads it says why and what to do, and shows no key.
    run = CliRunner().invoke(main, ["run", "hi", "--provider", "openai", "--no-record"])
    assert run.exit_code == 2, run.output
    assert message in run.output and "Traceback" not in run.output
    listed = CliRunner().invoke(main, ["keys", "list"])
    assert listed.exit_code == 0 and message in listed.output
    for command in (["keys", "set", "openai"], ["keys", "remove", "openai"]):
        out = CliRunner().invoke(main, command, input="sk-new\n")
        assert out.exit_code == 1 and message in out.output
    assert KEY not in run.output + listed.output
    # The variable, when set, is used without reading the file.
    assert find_key("OPENAI_API_KEY", {"OPENAI_API_KEY": ENV_KEY}) == ENV_KEY
    assert key_status("OPENAI_API_KEY").problem is not None


def test_a_keys_file_of_another_user_is_refused() -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    path = _stored_then("unchanged")
    os.chown(path, 65534, 65534)
    with pytest.raises(ConfigurationError, match="belongs to another user"):
        find_key("OPENAI_API_KEY")


def test_a_keys_file_that_is_not_a_file_is_refused() -> None:
    path = keys_path()
    path.parent.mkdir(mode=0o700, parents=True)
    os.mkfifo(path, 0o600)  # a FIFO must not hang the command
    with pytest.raises(ConfigurationError, match="is not a regular file"):
        find_key("OPENAI_API_KEY")


def test_a_directory_others_can_write_to_is_refused() -> None:
    directory = keys_path().parent
    directory.mkdir(parents=True)
    directory.chmod(0o777)
    done = nr_llm("keys", "set", "openai", stdin=KEY)
    assert done.returncode == 1
    assert f"run `chmod 700 {directory}`" in done.stderr
    assert not keys_path().exists()


@pytest.mark.parametrize(
    "content",
    [
        b"not json " + KEY.encode(),
        json.dumps({KEY: "OPENAI_API_KEY"}).encode(),  # pasted the wrong way round
        json.dumps({"OPENAI_API_KEY": ["x"]}).encode(),
        json.dumps({"OPENAI_API_KEY": "sk a"}).encode(),
        json.dumps([KEY]).encode(),
    ],
)
def test_a_damaged_keys_file_is_refused_without_quoting_it(content: bytes) -> None:
    path = keys_path()
    path.parent.mkdir(mode=0o700, parents=True)
    path.write_bytes(content)
    path.chmod(0o600)
    with pytest.raises(ConfigurationError) as info:
        find_key("OPENAI_API_KEY")
    assert KEY not in str(info.value) and "sk a" not in str(info.value)
    assert str(info.value).startswith(str(path))


def test_on_a_terminal_the_key_is_asked_for_and_never_echoed() -> None:
    """A real ``nr-llm`` process on a pseudo-terminal: the prompt is shown, the key typed is
    not (the terminal's echo is off while it is read), and it is stored."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nr_llm_core", "keys", "set", "openai"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    shown = b""
    typed = False
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                proc.kill()
                pytest.fail(f"no prompt on the pty: {shown!r}")
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            shown += chunk
            if not typed and b"(it is not shown)" in shown:
                os.write(master, KEY.encode() + b"\n")
                typed = True
    finally:
        os.close(master)
    assert proc.wait(30) == 0, shown
    assert typed
    assert KEY.encode() not in shown
    assert json.loads(keys_path().read_text()) == {"OPENAI_API_KEY": KEY}
