"""The files ``nr-llm new-tool`` writes (``string.Template``: ``$name``, ``$module``, ``$dist``)."""

from __future__ import annotations

from typing import Final

__all__ = ["TEMPLATES"]

PYPROJECT: Final = """\
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "$dist"
version = "0.1.0"
description = "The $name tool for nr-llm."
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["nr-llm"]

[project.optional-dependencies]
test = ["pytest>=8"]

# The entry-point name is the tool's name; nr-llm finds the tool through this group.
[project.entry-points."nr_llm.tool"]
$name = "$module:$name"

[tool.pytest.ini_options]
addopts = "-ra --strict-markers"
filterwarnings = ["error"]
"""

TOOL: Final = '''\
"""The $name tool."""

from __future__ import annotations

from collections import Counter
from typing import Annotated

from nr_llm_core import Artifact, ToolResult, tool

__all__ = ["$name"]


@tool(data_class="public")
def $name(text: Annotated[str, "The text to count words in."]) -> ToolResult:
    """Count the words in a text.

    Replace this with what your tool does: the first paragraph is the description the model
    reads, the type hints become the JSON Schema of its arguments.
    """
    words = Counter(text.split())
    # The content is all the model sees; the table is for people and the audit copy.
    return ToolResult.text(
        f"{sum(words.values())} words, {len(words)} distinct",
        Artifact.table("words", ["word", "count"], [[w, str(n)] for w, n in words.most_common()]),
    )
'''

TEST: Final = '''\
"""Tests for the $name tool, through the real nr-llm seam and loop."""

from __future__ import annotations

from $module import $name

from nr_llm_core.testing import assert_bounded, assert_no_artifact_bytes_in


def test_counts_words(tool_host):
    result = tool_host($name).invoke("$name", {"text": "to be or not to be"})
    assert result.content == "6 words, 4 distinct"
    assert result.artifacts[0].data["rows"][0] == ["to", "2"]
    assert_bounded(result)


def test_refuses_arguments_that_do_not_fit(tool_host):
    result = tool_host($name).invoke("$name", {"text": 42})
    assert result.is_error
    assert result.content.startswith('Error: invalid arguments for tool "$name"')


def test_artifacts_never_reach_the_model(scripted_loop):
    loop = scripted_loop(
        [{"tool_calls": [{"name": "$name", "arguments": {"text": "zebra-7 zebra-7"}}]}, "Done."],
        $name,
    )
    result = loop.run("Count the words.")
    assert result.content == "Done."
    assert_no_artifact_bytes_in(loop.provider.requests, result)
'''

README: Final = """\
# $dist

The `$name` tool for nr-llm. It starts as an example that counts words: make it do what
`$name` should, and say so in its docstring (its first paragraph is what a model reads).

```sh
pip install -e '.[test]'
pytest
nr-llm tools run $name --args '{"text": "to be or not to be"}'
```

The package depends on `nr-llm`, which is not on PyPI yet. Install nr-llm's own wheel first
(`python -m build` in an nr-llm clone writes one to `dist/`), so that pip finds the dependency
installed and never looks the name up on an index, where anyone could publish a package of
that name:

```sh
pip install /path/to/nr-llm/dist/nr_llm-*.whl
pip install -e '.[test]'
```

- `src/$module/__init__.py`: the tool, one `@tool` function.
- `pyproject.toml`: the `nr_llm.tool` entry point `$name = "$module:$name"`. The entry-point
  name must equal the tool's name.
- `tests/test_$name.py`: tests with the `tool_host` and `scripted_loop` fixtures of nr-llm's
  pytest plugin.
"""

GITIGNORE: Final = """\
# nr-llm's audit store and a scripted provider's script, written where a command runs
.nr-llm/
# Python and build leftovers
__pycache__/
*.egg-info/
build/
dist/
.venv/
.pytest_cache/
"""

#: relative path (a template too) -> content template
TEMPLATES: Final = {
    ".gitignore": GITIGNORE,
    "pyproject.toml": PYPROJECT,
    "README.md": README,
    "src/$module/__init__.py": TOOL,
    "tests/test_$name.py": TEST,
}
