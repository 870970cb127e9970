"""Read-only nr-llm tools over a local git repository.

The repository is configured by the host (``NR_LLM_GIT_REPO``, default the working directory),
never chosen by the model. ``git`` runs with argument lists (never a shell), with a timeout and
bounded output.
"""

from __future__ import annotations

from nr_llm_git.tools import git_diff_stat, git_log, git_show_file, git_status

__all__ = ["git_diff_stat", "git_log", "git_show_file", "git_status"]
