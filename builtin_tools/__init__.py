"""The builtin tools of nr-llm, one module per group.

They are registered through the same ``nr_llm.tool`` entry points as any third-party tool
(see ``pyproject.toml``): the host has no private path to them. Importing this package imports
nothing heavy; SQLAlchemy is imported when a records tool runs.

- :mod:`nr_llm_builtins.records`: ``list_tables``, ``describe_table``, ``read_records``,
  ``search_records``, ``update_record``
- :mod:`nr_llm_builtins.files`: ``list_files``, ``read_file``, ``search_files``
- :mod:`nr_llm_builtins.system`: ``get_env``, ``get_env_raw``, ``system_status``
- :mod:`nr_llm_builtins.utility`: ``current_time``, ``calculate``
"""

from __future__ import annotations

__all__: list[str] = []
