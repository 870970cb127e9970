"""The GenAI semantic conventions nr-llm follows: one pinned version, every name spelt out here.

The names are written out rather than taken from ``opentelemetry-semantic-conventions``: its
GenAI constants are deprecated upstream (the conventions moved to their own repository) and
change between releases. Pinned: **semantic conventions v1.41.0**, the last release of
``open-telemetry/semantic-conventions`` that carries the GenAI conventions (status:
Development); spans ``invoke_agent`` (internal), ``chat`` (inference client), ``execute_tool``;
metrics ``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage``. Moving to a
later version is a change to this module, its tests and docs/telemetry.md, nothing else.

Names under ``nr_llm.`` are nr-llm's own (run id, privacy level, counts and lengths kept at
METADATA); the conventions allow an instrumentation its own namespace.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "APPROVAL_DIGEST",
    "APPROVED_COUNT",
    "CHAT",
    "CONTENT_LENGTH",
    "CONVERSATION_ID",
    "DENIED_COUNT",
    "DURATION_BUCKETS",
    "ERROR_OTHER",
    "ERROR_TYPE",
    "EVENT_APPROVAL",
    "EVENT_RETRY",
    "EVENT_SUSPENDED",
    "EXECUTE_TOOL",
    "FINISH_REASONS",
    "INPUT_MESSAGES",
    "INVOKE_AGENT",
    "ITERATIONS",
    "LINK_RESUMES",
    "LINK_TYPE",
    "MESSAGES_SENT_COUNT",
    "NEEDING_COUNT",
    "NOTES",
    "OPERATION_DURATION",
    "OPERATION_NAME",
    "OUTPUT_MESSAGES",
    "PENDING_COUNT",
    "PRIVACY_LEVEL",
    "PROVIDER_ANTHROPIC",
    "PROVIDER_NAME",
    "PROVIDER_OPENAI",
    "PROVIDER_SCRIPTED",
    "REQUESTED_TOOL_NAMES",
    "REQUEST_MAX_TOKENS",
    "REQUEST_MODEL",
    "RESPONSE_FINISH_REASONS",
    "RETRIES",
    "RETRY_ATTEMPT",
    "RETRY_DELAY",
    "ROUND",
    "RUN_ID",
    "RUN_RESUMED",
    "RUN_STATUS",
    "SCHEMA_URL",
    "SCOPE",
    "SEMCONV_VERSION",
    "SERVER_ADDRESS",
    "SERVER_PORT",
    "TERMINATION_REASON",
    "THINKING_LENGTH",
    "TOKEN_BUCKETS",
    "TOKEN_TYPE",
    "TOKEN_USAGE",
    "TOOL_ARTIFACTS_COUNT",
    "TOOL_ARTIFACT_TYPES",
    "TOOL_CALL_ARGUMENTS",
    "TOOL_CALL_ID",
    "TOOL_CALL_RESULT",
    "TOOL_IS_ERROR",
    "TOOL_NAME",
    "TOOL_RESULT_LENGTH",
    "TOOL_TYPE",
    "TOOL_TYPE_FUNCTION",
    "TRUNCATED",
    "USAGE_CACHE_CREATION_INPUT_TOKENS",
    "USAGE_CACHE_READ_INPUT_TOKENS",
    "USAGE_INPUT_TOKENS",
    "USAGE_OUTPUT_TOKENS",
]

#: The version of the semantic conventions every name below comes from.
SEMCONV_VERSION: Final = "1.41.0"
#: Its schema URL, given to the tracer and the meter.
SCHEMA_URL: Final = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
#: The instrumentation scope's name.
SCOPE: Final = "nr_llm_core.otel"

# -- operations (gen_ai.operation.name) and span names ------------------------------------------
INVOKE_AGENT: Final = "invoke_agent"
CHAT: Final = "chat"
EXECUTE_TOOL: Final = "execute_tool"

# -- GenAI attributes ---------------------------------------------------------------------------
OPERATION_NAME: Final = "gen_ai.operation.name"
PROVIDER_NAME: Final = "gen_ai.provider.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
TOKEN_TYPE: Final = "gen_ai.token.type"  # noqa: S105  # an attribute name
ERROR_TYPE: Final = "error.type"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"

#: ``gen_ai.tool.type`` of every nr-llm tool: the host runs it from the model's arguments.
TOOL_TYPE_FUNCTION: Final = "function"
#: ``error.type`` when no more specific host word applies.
ERROR_OTHER: Final = "_OTHER"
#: ``gen_ai.provider.name`` of the adapters nr-llm ships (well-known values where they exist).
PROVIDER_OPENAI: Final = "openai"
PROVIDER_ANTHROPIC: Final = "anthropic"
PROVIDER_SCRIPTED: Final = "nr_llm.scripted"
#: The loop's stop reasons as ``gen_ai.response.finish_reasons`` values.
FINISH_REASONS: Final = {
    "end": "stop",
    "tool_calls": "tool_calls",
    "length": "length",
    "other": "other",
}

# -- metrics ------------------------------------------------------------------------------------
OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
TOKEN_USAGE: Final = "gen_ai.client.token.usage"  # noqa: S105  # a metric name
#: The explicit bucket boundaries the conventions give for each (seconds; tokens).
DURATION_BUCKETS: Final = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)
TOKEN_BUCKETS: Final = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)

# -- nr-llm's own -------------------------------------------------------------------------------
RUN_ID: Final = "nr_llm.run.id"
RUN_STATUS: Final = "nr_llm.run.status"
RUN_RESUMED: Final = "nr_llm.run.resumed"
TERMINATION_REASON: Final = "nr_llm.run.termination_reason"
ITERATIONS: Final = "nr_llm.run.iterations"
TRUNCATED: Final = "nr_llm.run.truncated"
PRIVACY_LEVEL: Final = "nr_llm.privacy.level"
ROUND: Final = "nr_llm.round"
NOTES: Final = "nr_llm.notes"
MESSAGES_SENT_COUNT: Final = "nr_llm.request.messages.count"
CONTENT_LENGTH: Final = "nr_llm.response.content.length"
THINKING_LENGTH: Final = "nr_llm.response.thinking.length"
REQUESTED_TOOL_NAMES: Final = "nr_llm.response.tool_call.names"
RETRIES: Final = "nr_llm.request.retries"
TOOL_IS_ERROR: Final = "nr_llm.tool.is_error"
TOOL_RESULT_LENGTH: Final = "nr_llm.tool.result.length"
TOOL_ARTIFACTS_COUNT: Final = "nr_llm.tool.artifacts.count"
TOOL_ARTIFACT_TYPES: Final = "nr_llm.tool.artifacts.types"
APPROVED_COUNT: Final = "nr_llm.approval.approved.count"
DENIED_COUNT: Final = "nr_llm.approval.denied.count"
APPROVAL_DIGEST: Final = "nr_llm.approval.digest"
PENDING_COUNT: Final = "nr_llm.approval.pending.count"
NEEDING_COUNT: Final = "nr_llm.approval.needed.count"
RETRY_ATTEMPT: Final = "nr_llm.retry.attempt"
RETRY_DELAY: Final = "nr_llm.retry.delay"
LINK_TYPE: Final = "nr_llm.link.type"

# Event names (nr-llm's own).
EVENT_RETRY: Final = "nr_llm.provider.retry"
EVENT_APPROVAL: Final = "nr_llm.approval"
EVENT_SUSPENDED: Final = "nr_llm.run.suspended"
#: ``nr_llm.link.type`` of the link from a resumed run's span to the span it suspended.
LINK_RESUMES: Final = "resumes"
