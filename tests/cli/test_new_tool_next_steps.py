"""``nr-llm new-tool``'s next steps and its refusal of a name say what to type next."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from nr_llm_core.cli import main


def test_after_the_cd_the_file_to_edit_is_named_from_the_package(tmp_path: Path) -> None:
    """The next steps say ``cd nr-llm-x`` and then ``edit nr-llm-x/src/…``, a path that no
    longer exists after the cd. The edit line names ``src/nr_llm_x/__init__.py`` from the
    package directory, and that file exists there."""
    result = CliRunner().invoke(main, ["new-tool", "word_count", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    root = tmp_path / "nr-llm-word-count"
    assert f"  cd {root}\n" in result.output
    edit = next(line for line in result.output.splitlines() if line.startswith("  edit "))
    shown = edit.removeprefix("  edit ").partition(":")[0]
    assert shown == os.path.join("src", "nr_llm_word_count", "__init__.py")
    assert (root / shown).is_file()


@pytest.mark.parametrize(
    ("name", "suggested"), [("my-tool", "my_tool"), ("My.Tool", "my_tool"), ("a b", "a_b")]
)
def test_a_name_that_is_not_an_identifier_is_refused_with_the_normalised_one(
    tmp_path: Path, name: str, suggested: str
) -> None:
    """``new-tool my-tool`` is refused; the message says new-tool needs a Python identifier
    and suggests ``my_tool``, which is then accepted. Nothing is written on the refusal."""
    refused = CliRunner().invoke(main, ["new-tool", name, "--dir", str(tmp_path)])
    assert refused.exit_code == 1, refused.output
    text = " ".join(refused.output.split())
    assert "new-tool needs a Python identifier" in text
    assert f"try `nr-llm new-tool {suggested}`" in text
    assert list(tmp_path.iterdir()) == []
    accepted = CliRunner().invoke(main, ["new-tool", suggested, "--dir", str(tmp_path)])
    assert accepted.exit_code == 0, accepted.output


def test_a_name_with_no_identifier_near_it_suggests_none(tmp_path: Path) -> None:
    """A name that normalises to no identifier (``1st``, ``class``) is refused without a
    suggestion that would be refused too."""
    for name in ("1st", "class", "-"):
        refused = CliRunner().invoke(main, ["new-tool", name, "--dir", str(tmp_path)])
        assert refused.exit_code == 1, refused.output
        assert "new-tool needs a Python identifier" in " ".join(refused.output.split())
        assert "try" not in refused.output
