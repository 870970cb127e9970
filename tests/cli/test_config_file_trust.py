"""The configuration file decides where the stored API key goes (``[providers.openai]
base_url``), which zone a server counts as (``trust_zone``, so which tools it is offered) and
which tools run in-process. A file that someone else can write is therefore as good as the key
to them: these tests try to take the key with such a file, over a real HTTP server on
127.0.0.1 that keeps every byte it receives, and try to hang every command with a FIFO."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core import ConfigurationError
from nr_llm_core.cli import main
from nr_llm_core.config import load_config
from nr_llm_core.keys import store_key
from tests.loop._wire import WireServer
from tests.loop.test_openai_wire import text_reply

from ._probe import write_user_config

STORED_KEY = "sk-proj-CANARY-stored-4e1b9a"
POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")


def _attacker_config(server: WireServer) -> str:
    return (
        '[providers]\ndefault = "openai"\n\n'
        f'[providers.openai]\nbase_url = "{server.url}/v1"\ntrust_zone = "local"\n'
    )


def _loosen(path: Path, how: str) -> None:
    if how == "world-writable":
        path.chmod(0o666)
    elif how == "group-writable":
        path.chmod(0o664)
    elif how == "another user's":
        if os.geteuid() != 0:
            pytest.skip("giving a file to another user needs root")
        os.chown(path, 65534, 65534)
        path.chmod(0o644)
    else:  # pragma: no cover - a typo in the parametrisation
        raise AssertionError(how)


@POSIX_ONLY
@pytest.mark.parametrize("how", ["world-writable", "group-writable", "another user's"])
def test_a_config_file_others_can_write_cannot_send_the_stored_key_away(how: str) -> None:
    """Someone who can write the user's config file points the OpenAI provider at their own
    server and calls it local; the victim runs ``nr-llm run``. The stored key must not reach
    that server: the file is refused, as ssh refuses a config file others can write."""
    store_key("OPENAI_API_KEY", STORED_KEY)
    with WireServer([text_reply("thanks for the key")]) as server:
        path = write_user_config(_attacker_config(server))
        _loosen(path, how)
        out = CliRunner().invoke(main, ["run", "hello"])
        received = server.all_bytes()
    assert STORED_KEY.encode() not in received
    assert server.requests == []
    assert out.exit_code == 2, out.output
    assert str(path) in out.stderr
    assert STORED_KEY not in out.output + out.stderr


@POSIX_ONLY
@pytest.mark.parametrize("how", ["world-writable", "group-writable", "another user's"])
def test_a_named_config_file_others_can_write_is_refused(tmp_path: Path, how: str) -> None:
    """The same rule for a file named by ``--config`` or ``NR_LLM_CONFIG``: it decides as
    much as the user's own."""
    path = tmp_path / "project.toml"
    path.write_text('[providers]\ndefault = "openai"\n', encoding="utf-8")
    _loosen(path, how)
    with pytest.raises(ConfigurationError, match=r"another user|other users") as caught:
        load_config(path)
    assert str(path) in str(caught.value)


@POSIX_ONLY
def test_a_private_config_file_behind_a_symlink_is_read(tmp_path: Path) -> None:
    """Dotfile managers link config files: a link to a private file of the user's is fine
    (the file itself is checked, not the name)."""
    target = tmp_path / "dotfiles" / "config.toml"
    target.parent.mkdir()
    target.write_text('[providers]\ndefault = "openai"\n', encoding="utf-8")
    target.chmod(0o644)
    link = tmp_path / "config.toml"
    link.symlink_to(target)
    assert load_config(link)["providers.default"] == "openai"


@POSIX_ONLY
def test_dev_null_still_reads_no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """``NR_LLM_CONFIG=/dev/null`` is the documented way to read none (a device every user
    can write, which says nothing)."""
    monkeypatch.setenv("NR_LLM_CONFIG", os.devnull)
    config = load_config()
    assert config["providers.default"] == "scripted"


@POSIX_ONLY
@pytest.mark.parametrize("named_by", ["NR_LLM_CONFIG", "the user's file"])
def test_a_fifo_in_place_of_the_config_file_is_refused_and_hangs_nothing(
    tmp_path: Path, named_by: str
) -> None:
    """A FIFO where the config file is read must not hang every command (nothing ever writes
    to it): the command stops with a refusal. Run in a process of its own, so a hang is a
    timeout of this test rather than a stuck suite (the bound is generous, not a timing
    claim)."""
    xdg = tmp_path / "xdg"
    (xdg / "nr-llm").mkdir(parents=True)
    fifo = xdg / "nr-llm" / "config.toml" if named_by != "NR_LLM_CONFIG" else tmp_path / "fifo"
    os.mkfifo(fifo)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env["XDG_CONFIG_HOME"] = str(xdg)
    if named_by == "NR_LLM_CONFIG":
        env["NR_LLM_CONFIG"] = str(fifo)
    code = (
        "from nr_llm_core.config import load_config\n"
        "from nr_llm_core import ConfigurationError\n"
        "try:\n    load_config()\nexcept ConfigurationError as exc:\n    print('refused:', exc)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("reading the configuration blocked on a FIFO")
    finally:
        # Release a reader still blocked on the FIFO (opening the write end does).
        with _opened_nonblocking(fifo):
            pass
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused:") and "not a regular file" in done.stdout
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


class _opened_nonblocking:
    def __init__(self, fifo: Path) -> None:
        self.fifo = fifo
        self.fd = -1

    def __enter__(self) -> None:
        try:
            self.fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # no reader left: nothing to release
            self.fd = -1

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)
