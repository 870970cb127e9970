"""Process isolation for untrusted tools: each isolated distribution runs in a worker process.

An in-process plugin is trusted code. A distribution named in an :class:`IsolationPolicy` (or in
``NR_LLM_ISOLATE``) is never imported by the host: a worker process
(``python -m nr_llm_core.isolation.worker``) imports it, reports its spec, and runs its calls
under a minimal environment, memory and CPU limits, and a per-call timeout that kills. What
comes back goes through the host's seam like any other result. See ``docs/trust-model.md``.
"""

from __future__ import annotations

from nr_llm_core.isolation.policy import ENV_ALLOW_LIST, ENV_ISOLATE, IsolationPolicy

__all__ = ["ENV_ALLOW_LIST", "ENV_ISOLATE", "IsolationPolicy"]
