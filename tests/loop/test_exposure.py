"""``zone_view``, the one function that decides what of a history a trust zone may see: the
cases a wire test cannot reach cheaply (shared call ids, host ids for replaced calls, the
boundary of what a provider wrote itself, the trace note through the privacy filter)."""

from __future__ import annotations

from nr_llm_core import ChatMessage, PrivacyLevel, RunStepPrivacyFilter, ToolCall
from nr_llm_core.exposure import WITHHELD_TOOL_NAME, zone_view
from nr_llm_core.privacy import _NOTE_RE
from nr_llm_core.providers import TrustZone
from nr_llm_core.results import DataClass
from nr_llm_core.trace import RunStep

from . import _zones as z

CLASSES = {
    "weather": DataClass.PUBLIC,
    "internal_report": DataClass.INTERNAL,
    "vault_read": DataClass.SECRET_ADJACENT,
}
EXTERNAL = TrustZone.EXTERNAL


def data_class_of(name: str) -> DataClass | None:
    return CLASSES.get(name)


def calls(*pairs: tuple[str, str], text: str | None = None, **arguments: str) -> ChatMessage:
    return ChatMessage.assistant_tool_calls(
        [ToolCall(id=id, name=name, arguments=arguments) for id, name in pairs], text=text
    )


def answers(view: tuple[ChatMessage, ...]) -> list[tuple[str | None, str | None]]:
    return [(m.tool_call_id, m.content) for m in view if m.tool_call_id is not None]


READ_VAULT = [
    ChatMessage.user("go"),
    calls(("v1", "vault_read")),
    ChatMessage.tool_result("v1", z.SECRET),
]


def test_a_local_zone_sees_the_history_as_it_is() -> None:
    history = [*READ_VAULT, ChatMessage.tool_result("ghost", z.SECRET), ChatMessage.assistant("ok")]
    view = zone_view(history, TrustZone.LOCAL, data_class_of)
    assert view.messages == tuple(history)
    assert view.notes() == []


def test_two_unanswered_calls_sharing_an_id_make_the_answer_unattributable() -> None:
    """Which call a shared id answers is unknowable: the first answer counts as unknown
    (withheld, even though one candidate is public); the second then answers the one call
    left."""
    history = [
        ChatMessage.user("go"),
        calls(("same", "weather"), ("same", "vault_read")),
        ChatMessage.tool_result("same", "first answer"),
        ChatMessage.tool_result("same", "second answer"),
    ]
    view = zone_view(history, EXTERNAL, data_class_of)
    assert answers(view.messages) == [
        ("same", z.unattributed("external")),
        ("same", z.over_ceiling("vault_read", "secret-adjacent", "external")),
    ]


def test_an_id_reused_after_its_answer_names_the_later_call() -> None:
    """A scripted provider restarts its ids in a continued run: each answer belongs to the
    latest call of that id that was still open."""
    history = [
        ChatMessage.user("go"),
        calls(("call_0_0", "weather")),
        ChatMessage.tool_result("call_0_0", "sunny"),
        calls(("call_0_0", "internal_report")),
        ChatMessage.tool_result("call_0_0", "figure 7"),
    ]
    assert answers(zone_view(history, EXTERNAL, data_class_of).messages) == [
        ("call_0_0", "sunny"),
        ("call_0_0", z.over_ceiling("internal_report", "internal", "external")),
    ]
    private = zone_view(history, TrustZone.PRIVATE_HOSTED, data_class_of)
    assert private.messages == tuple(history)


def test_a_turn_written_after_withheld_output_keeps_no_model_byte() -> None:
    """Text, call ids, arguments and the name of a tool that is not installed are the local
    model's, written after it read the secret: each is replaced by host bytes; an installed
    tool's name is the host's own and stays, so does a turn without text."""
    history = [
        *READ_VAULT,
        calls((f"id-{z.SECRET}", "weather"), (f"id2-{z.SECRET}", z.SECRET[:20]), text=z.SECRET),
        ChatMessage.tool_result(f"id-{z.SECRET}", "sunny"),
        ChatMessage.tool_result(f"id2-{z.SECRET}", f'Error: unknown tool "{z.SECRET[:20]}"'),
        calls(("c3", "weather"), note=z.SECRET),
        ChatMessage.tool_result("c3", "sunny"),
        ChatMessage.tool_result(f"id-{z.SECRET}", "a second answer to a replaced call"),
    ]
    view = zone_view(history, EXTERNAL, data_class_of)
    assert z.SECRET not in repr([m.to_dict() for m in view.messages])
    _, _, _, turn, a1, a2, turn2, a3, extra = view.messages
    assert turn.content == z.derived_turn("external")
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("withheld_call_1", "weather", {}),
        ("withheld_call_2", WITHHELD_TOOL_NAME, {}),
    ]
    assert [(m.tool_call_id, m.content) for m in (a1, a2)] == [
        ("withheld_call_1", z.derived_output("external")),
        ("withheld_call_2", z.derived_output("external")),
    ]
    assert turn2.content is None
    assert [(c.id, c.arguments) for c in turn2.tool_calls] == [("withheld_call_3", {})]
    assert (a3.tool_call_id, a3.content) == ("withheld_call_3", z.derived_output("external"))
    # An answer to no open call, under an id the model wrote after the secret: a host id.
    assert (extra.tool_call_id, extra.content) == ("withheld_call_4", z.unattributed("external"))
    assert (view.withheld_outputs, view.derived) == (2, 5)


def test_what_the_provider_wrote_itself_is_kept() -> None:
    """From ``written_here`` on, the turns were written by the provider being asked, from this
    very view: they are not replaced, though they follow withheld output."""
    history = [*READ_VAULT, ChatMessage.assistant("local text"), ChatMessage.assistant("mine")]
    view = zone_view(history, EXTERNAL, data_class_of, written_here=4)
    assert [m.content for m in view.messages[3:]] == [z.derived_turn("external"), "mine"]
    strictest = zone_view(history, EXTERNAL, data_class_of)
    assert strictest.messages[4].content == z.derived_turn("external")


def test_the_hosts_not_run_answers_are_kept_for_any_class() -> None:
    """Answers that say a call did not run are functions of the call's name alone."""
    history = [
        ChatMessage.user("go"),
        calls(("a", "vault_read"), ("b", "vault_read"), ("c", "nope"), ("d", "vault_read")),
        ChatMessage.tool_result("a", "Not run: the token budget is spent."),
        ChatMessage.tool_result("b", 'Error: the user did not approve the call to "vault_read".'),
        ChatMessage.tool_result("c", 'Error: unknown tool "nope"'),
        ChatMessage.tool_result("d", 'Error: unknown tool "nope"'),  # not d's name: withheld
    ]
    view = zone_view(history, EXTERNAL, data_class_of)
    assert view.messages[:-1] == tuple(history[:-1])
    assert view.messages[-1].content == z.over_ceiling("vault_read", "secret-adjacent", "external")


def test_the_note_is_host_words_the_privacy_filter_keeps() -> None:
    """The note counts what was withheld; the METADATA filter keeps it as it is (it matches
    the filter's note pattern for every zone), so an operator sees it in the audit store."""
    history = [*READ_VAULT, ChatMessage.assistant(z.SECRET)]
    for zone in (TrustZone.EXTERNAL, TrustZone.PRIVATE_HOSTED):
        view = zone_view(history, zone, data_class_of)
        (note,) = view.notes()
        assert note == (
            f"trust zone {zone.value}: withheld 1 tool output(s) above its ceiling and "
            "1 message(s) written after them"
        )
        assert _NOTE_RE.fullmatch(note)
        step = RunStep.request(
            round=1, messages=[m.to_dict() for m in view.messages], notes=view.notes()
        )
        stored = RunStepPrivacyFilter(PrivacyLevel.METADATA).filter(step.to_dict())
        assert stored["notes"] == [note]
        assert z.SECRET not in repr(stored)
