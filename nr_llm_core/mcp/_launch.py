"""The launcher of an isolated stdio MCP server: limits and lockdown, then ``exec`` of its command.

``python -m nr_llm_core.mcp._launch CONFIG_JSON -- COMMAND [ARGS…]``. It sets ``RLIMIT_CORE``
to 0 and ``RLIMIT_AS`` to the configured bytes, drops every capability and sets
``no_new_privs`` (:func:`~nr_llm_core.isolation.lockdown.lock_down_worker`, Linux), then
replaces itself with the server, which keeps the process id, the process group the host kills,
the limits, ``no_new_privs`` and the empty capability sets. A launcher that cannot lock down
exits with ``LOCKDOWN_FAILED`` and starts nothing. Only the standard library and the lockdown
module are imported: the server's start pays for no more.
"""

from __future__ import annotations

import json
import os
import sys

from nr_llm_core.isolation.lockdown import LOCKDOWN_FAILED, LockdownError, lock_down_worker


def main(argv: list[str]) -> int:
    """Apply the configuration in ``argv[0]`` and exec the command after ``--``."""
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m nr_llm_core.mcp._launch CONFIG -- COMMAND...", file=sys.stderr)
        return 2
    config = json.loads(argv[0])
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    memory = config.get("memory_bytes")
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    try:
        lock_down_worker()
    except (LockdownError, OSError):
        print("nr-llm: the MCP server could not drop its privileges", file=sys.stderr)
        return LOCKDOWN_FAILED
    command = argv[2:]
    try:
        os.execvp(command[0], command)  # noqa: S606  # the operator's configured command
    except OSError as exc:
        print(f"nr-llm: the MCP server could not start ({exc.strerror})", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
