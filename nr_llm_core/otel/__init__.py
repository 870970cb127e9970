"""OpenTelemetry GenAI spans and metrics for tool-loop runs, under the privacy level.

Installed with the ``otel`` extra (``opentelemetry-api`` only). Nothing in nr-llm imports this
package unless a ``ToolLoop`` is given an :class:`OtelTelemetry` or ``NR_LLM_OTEL`` is set.
"""

from nr_llm_core.otel._telemetry import OtelTelemetry
from nr_llm_core.otel.attributes import step_attributes
from nr_llm_core.otel.semconv import SEMCONV_VERSION

__all__ = ["SEMCONV_VERSION", "OtelTelemetry", "step_attributes"]
