"""The builtin tools of nr-llm, one module per group.

They are registered through the same ``nr_llm.tool`` entry points as any third-party tool
(see ``pyproject.toml``): the host has no private path to them. Importing this package imports
nothing heavy; SQLAlchemy is imported when a records tool runs.

- :mod:`builtin_tools.records`: ``list_tables``, ``describe_table``, ``read_records``,
  ``search_records``, ``update_record``
- :mod:`builtin_tools.files`: ``list_files``, ``read_file``, ``search_files``
- :mod:`builtin_tools.system`: ``get_env``, ``get_env_raw``, ``system_status``
- :mod:`builtin_tools.utility`: ``current_time``, ``calculate``
"""

from __future__ import annotations

__all__: list[str] = []
