"""Every row of ADVERSARIAL.md is pinned by at least one concrete test, and stays pinned.

``ADVERSARIAL.md`` beside this file lists what a hostile tool can return or do, one table row per
case. :data:`PINNED` maps each row (its section and its input cell, exactly as written there) to
the pytest node ids of the tests that pin it. These tests fail when a row has no entry, when an
entry names a row that is not in the file, and when a node id does not resolve to a test function,
so adding a row, or renaming or deleting a pinning test, breaks the suite until the index is
brought up to date.

Node ids are resolved by reading each test file's syntax tree, not by importing it: nothing here
runs the referenced tests or their module-level code.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROWS_FILE = Path(__file__).with_name("ADVERSARIAL.md")

CONTENT = "tests/core/test_bounding_content.py"
ARTIFACTS = "tests/core/test_bounding_artifacts.py"
COLUMNS = "tests/core/test_bounding_columns.py"
HOST = "tests/core/test_host.py"
ENTRY_POINTS = "tests/loading/test_entry_points.py"
PIP_INSTALL = "tests/loading/test_pip_install.py"
LOOP = "tests/loop/test_loop.py"
OPENAI = "tests/loop/test_openai_wire.py"
ANTHROPIC = "tests/loop/test_anthropic_wire.py"
BROWSER = "tests/playground/test_browser.py"
STATIC = "tests/playground/test_static.py"
HTTP = "tests/playground/test_http.py"
CLI_RUNS = "tests/test_cli_runs.py"
CLI_RUN = "tests/loop/test_cli_run.py"
PRIVACY = "tests/test_privacy.py"
CANARIES = "tests/test_privacy_canaries.py"
REDACTION = "tests/test_redaction.py"
AUDIT_STORE = "tests/test_audit_store.py"
AUDIT_LOOP = "tests/test_audit_loop.py"
ADV_CONTENT = "tests/adversarial/test_content.py"
ADV_ARTIFACTS = "tests/adversarial/test_artifacts.py"
ADV_LOADING = "tests/adversarial/test_errors_and_loading.py"
ADV_STORAGE = "tests/adversarial/test_rendering_and_storage.py"
ADV_FINDINGS = "tests/adversarial/test_findings.py"
ADV_CLI = "tests/adversarial/test_cli_hygiene.py"
SCHEMAS = "tests/core/test_argument_schemas.py"
ISOLATED_SCHEMAS = "tests/isolation/test_isolated_schemas.py"
ERROR_TEXT = "tests/properties/test_error_text_property.py"
TOOL_ERROR = "tests/loop/test_tool_error_trace.py"
HOSTILE_EXC = "tests/adversarial/test_hostile_exceptions.py"
HOSTILE_STR = "tests/adversarial/test_hostile_strings.py"
HOSTILE_REG = "tests/adversarial/test_hostile_registration.py"
BASE_EXC = "tests/adversarial/test_base_exceptions.py"

# section -> input cell (verbatim) -> node ids of the tests that pin the row.
PINNED: dict[str, dict[str, tuple[str, ...]]] = {
    "Content": {
        r"lone surrogate `'a\ud800b'`": (
            f"{CONTENT}::test_lone_surrogate_becomes_replacement_character",
            f"{CONTENT}::test_surrogates_over_the_cap_are_coerced_and_cut",
        ),
        r"a surrogate pair as two code units (`'\ud83d\ude00'`)": (
            f"{CONTENT}::test_split_surrogate_pair_is_rejoined",
            f"{ARTIFACTS}::test_strings_are_coerced_everywhere",
        ),
        "`bytes`, `None`, a number, a `str` subclass with evil `__str__`/`__len__`": (
            f"{CONTENT}::test_non_str_content_is_an_invalid_result",
            f"{CONTENT}::test_str_subclass_content_is_read_through_str",
            f"{HOST}::test_returning_anything_but_a_tool_result_is_an_invalid_result",
            f"{ADV_CONTENT}::test_content_that_is_not_a_str_is_an_invalid_result_error",
            f"{ADV_CONTENT}::test_a_str_subclass_is_read_through_str_and_no_override_runs",
        ),
        "exactly 50,000 bytes / 50,001 bytes": (
            f"{CONTENT}::test_exactly_50000_bytes_passes_unchanged",
            f"{CONTENT}::test_50001_bytes_is_cut_to_at_most_50000_with_the_marker",
            f"{CONTENT}::test_marker_is_42_bytes_and_cut_is_49958",
            f"{HOST}::test_the_returned_result_is_rebuilt_from_bounded_values",
        ),
        "a multi-byte character straddling byte 49,958": (
            f"{CONTENT}::test_multibyte_character_straddling_the_cut_is_dropped_whole",
        ),
        "1 GiB of content": (f"{CONTENT}::test_one_gib_of_content_is_capped_without_copying_it",),
        "text that imitates host framing or a tool-call JSON": (
            f"{OPENAI}::test_tool_text_that_imitates_framing_is_sent_as_data",
            f"{CONTENT}::test_text_imitating_framing_is_kept_as_data",
        ),
        "a 1 GiB `str` subclass whose `__len__`, `__iter__`, `__getitem__`, `encode`, `__str__`, "
        "`__hash__` are hostile, as content, a label, a key or a leaf": (
            f"{HOSTILE_STR}::test_a_one_gib_str_subclass_is_cut_or_refused_without_a_whole_copy",
            f"{HOSTILE_STR}::test_a_small_str_subclass_gives_its_real_characters_and_runs_nothing",
            f"{HOSTILE_STR}::test_read_str_copies_at_most_its_limit_of_a_subclass",
            f"{HOSTILE_STR}::test_content_over_the_cap_in_a_subclass_is_cut_like_an_exact_str",
        ),
        "`bytes` subclasses as content, a label, a key, a leaf or a cell, one whose metaclass "
        "makes its names code": (
            f"{HOSTILE_STR}::test_bytes_content_is_an_invalid_result_and_no_method_runs",
            f"{HOSTILE_STR}::test_bytes_in_artifacts_give_the_marker_and_no_method_runs",
            f"{HOSTILE_STR}::test_a_str_subclass_with_probing_class_names_is_read_and_runs_nothing",
        ),
    },
    "Artifacts": {
        "a value whose class's metaclass defines `__eq__` and `__hash__`: alone, in a long list, "
        "in rows, among strings, as a str subclass value or key": (
            f"{COLUMNS}::test_a_class_whose_metaclass_defines_eq_and_hash_never_runs_them",
        ),
        'a split surrogate pair (`"\\ud83d\\ude00"`, two code points) in a string, a key '
        "or a label": (
            f"{COLUMNS}::test_a_rejoined_surrogate_pair_is_counted_as_the_one_character_it_becomes",
            f"{COLUMNS}::test_a_rejoined_surrogate_pair_in_the_label_is_counted_once",
            f"{COLUMNS}::test_an_artifact_of_exactly_50000_bytes_with_split_pairs_is_kept",
        ),
        "NaN or ±inf anywhere": (f"{ARTIFACTS}::test_non_finite_floats_give_the_marker",),
        "`-0.0`, `1e-5`, `1e16`, `12.0`": (f"{ARTIFACTS}::test_finite_floats_are_kept",),
        "ints beyond the encoder's range, `10**5000`": (
            f"{ARTIFACTS}::test_ints_beyond_the_range_give_the_marker",
            f"{ARTIFACTS}::test_int_subclass_range",
        ),
        "`True` vs `1`": (f"{ARTIFACTS}::test_true_stays_true_and_1_stays_1",),
        "bytes, bytearray, memoryview, set, frozenset, datetime, UUID, Decimal, Enum, dataclass, "
        "arbitrary object": (
            f"{ARTIFACTS}::test_foreign_types_give_the_marker_without_running_their_methods",
            f"{ADV_ARTIFACTS}::test_foreign_values_give_the_marker_and_none_of_their_methods_runs",
            f"{ADV_ARTIFACTS}::test_the_probes_do_record",
        ),
        "an object whose `__class__` property claims to be `dict`": (
            f"{ARTIFACTS}::test_an_object_claiming_to_be_a_dict_gives_the_marker",
            f"{ADV_ARTIFACTS}::test_an_object_claiming_a_json_type_gives_the_marker_and_its_property_never_runs",
        ),
        "dict/list/str/int subclasses overriding `items`, `keys`, `__iter__`, `__len__`, "
        "`__str__`, `__eq__`": (
            f"{ARTIFACTS}::test_dict_subclass_is_read_through_dict",
            f"{ARTIFACTS}::test_list_and_tuple_subclasses_are_read_through_their_base",
            f"{ARTIFACTS}::test_str_int_float_subclasses_are_read_through_their_base",
            f"{ARTIFACTS}::test_str_subclass_keys_and_labels_are_read_through_str",
            f"{ARTIFACTS}::test_str_subclass_key_colliding_with_a_plain_key_gives_the_marker",
            f"{ADV_ARTIFACTS}::test_json_subclasses_give_their_real_data_and_no_override_runs",
        ),
        "tuples, namedtuples": (f"{ARTIFACTS}::test_tuples_and_namedtuples_become_lists",),
        "non-str keys (`1`, `None`, `True`, tuples)": (
            f"{ARTIFACTS}::test_non_str_keys_give_the_marker",
        ),
        "keys `1` and `'1'` together": (
            f"{ARTIFACTS}::test_keys_1_and_str_1_together_give_the_marker",
            f"{ARTIFACTS}::test_keys_colliding_after_coercion_give_the_marker",
        ),
        "a lone surrogate in a key": (f"{ARTIFACTS}::test_lone_surrogate_in_a_key_is_coerced",),
        "64 nested containers / 65 (count per DESIGN.md, empty innermost included)": (
            f"{ARTIFACTS}::test_depth_64_is_accepted_and_65_refused",
            f"{ARTIFACTS}::test_depth_counts_the_empty_innermost_container",
            f"{ARTIFACTS}::test_depth_counts_subclass_containers_like_their_bases",
        ),
        "100,000-deep nested tuples or lists": (
            f"{ARTIFACTS}::test_100000_deep_tuples_never_reach_the_encoder",
            f"{ADV_ARTIFACTS}::test_100000_deep_nesting_is_refused_at_the_depth_limit_without_walking_on",
        ),
        "a cycle": (f"{ARTIFACTS}::test_a_cycle_gives_the_marker",),
        "a dict with 10M keys, a list of 10M items, one 1 GiB string": (
            f"{ARTIFACTS}::test_huge_inputs_are_refused_before_being_copied",
            f"{ARTIFACTS}::test_a_one_gib_string_anywhere_is_refused_without_a_copy",
            f"{ADV_ARTIFACTS}::test_a_dict_with_ten_million_keys_is_refused_without_reading_it",
        ),
        "encodes to exactly 50,000 / 50,001 bytes with the shared encoder": (
            f"{ARTIFACTS}::test_exactly_50000_encoded_bytes_is_kept_and_50001_refused",
            f"{ARTIFACTS}::test_every_shape_at_exactly_the_limit_is_kept",
            f"{ARTIFACTS}::test_the_check_is_on_encoded_bytes_not_characters",
        ),
        "one valid artifact + one invalid": (
            f"{ARTIFACTS}::test_one_valid_and_one_invalid_artifact_give_only_the_marker",
        ),
        "`artifacts` not a tuple of `Artifact` (a dict, a generator)": (
            f"{ARTIFACTS}::test_artifacts_not_a_tuple_of_artifacts_is_an_invalid_result",
            f"{ADV_ARTIFACTS}::test_artifacts_that_are_not_a_tuple_of_artifacts_are_an_invalid_result_at_the_seam",
        ),
        "an empty artifact list": (f"{ARTIFACTS}::test_an_empty_artifact_list_stays_empty",),
        "the tool mutates its artifact data after returning": (
            f"{ARTIFACTS}::test_mutating_after_return_changes_nothing_the_host_returned",
            f"{ADV_ARTIFACTS}::test_mutating_artifact_data_after_return_changes_nothing_streamed_or_stored",
        ),
        "a marker's text": (
            f"{ARTIFACTS}::test_marker_text_never_holds_plugin_bytes",
            f"{ARTIFACTS}::test_marker_reasons_are_the_contract_strings",
        ),
    },
    "Errors and loading": {
        "`execute` raises, with a secret or a 10 MB `__str__` in the exception": (
            f"{HOST}::test_exceptions_become_a_generic_error_and_are_logged_without_their_text",
            f"{LOOP}::test_exception_text_never_enters_the_conversation",
        ),
        "`execute` raises `BaseException` subclasses (`KeyboardInterrupt` aside) / `SystemExit`": (
            f"{HOST}::test_base_exceptions_do_not_escape",
            f"{HOST}::test_keyboard_interrupt_is_not_swallowed",
        ),
        "a tool that never returns": (
            f"{LOOP}::test_a_tool_that_never_returns_times_out_and_the_loop_continues",
            f"{HOST}::test_a_tool_that_never_returns_times_out_and_the_host_goes_on",
        ),
        "arguments not matching the schema, or not a JSON object": (
            f"{HOST}::test_arguments_must_be_a_json_object",
            f"{HOST}::test_arguments_are_validated_against_the_schema_and_execute_is_not_called",
        ),
        "an argument type's validator, converter, `__attrs_post_init__` or structure hook "
        "raising, a secret in the message or in the exception's type name": (
            f"{ERROR_TEXT}::test_no_exception_text_or_type_name_reaches_a_provider",
            f"{TOOL_ERROR}::test_redacted_stores_the_detail_with_secrets_masked",
            f"{TOOL_ERROR}::test_metadata_and_none_keep_no_byte_of_the_detail",
        ),
        "a tool schema with a `$ref` to an `http(s)` URL, a `file:` URI or another document, "
        "or an unknown `$schema` (an isolated tool's too)": (
            f"{SCHEMAS}::test_a_ref_to_a_local_http_server_is_refused_and_never_requested",
            f"{SCHEMAS}::test_every_ref_outside_the_schema_is_refused_at_registration",
            f"{SCHEMAS}::test_a_file_ref_never_opens_the_file",
            f"{SCHEMAS}::test_an_unknown_meta_schema_is_refused_and_never_requested",
            f"{ISOLATED_SCHEMAS}::test_a_remote_ref_in_an_isolated_tools_schema_is_refused_unfetched",
        ),
        "arguments nested deeper than a recursive schema allows": (
            f"{HOST}::test_arguments_nested_deeper_than_a_recursive_schema_allows_are_refused_unchecked",
            f"{SCHEMAS}::test_the_allowed_depth_shrinks_with_a_schemas_references",
        ),
        "import error, exception at import, missing attribute, wrong object type in an entry "
        "point": (
            f"{ENTRY_POINTS}::test_broken_distributions_are_recorded_and_never_stop_the_rest",
        ),
        "two distributions claiming one tool name; name ≠ spec name": (
            f"{ENTRY_POINTS}::test_broken_distributions_are_recorded_and_never_stop_the_rest",
            f"{ENTRY_POINTS}::test_strict_mode_raises_on_the_first_problem_in_sorted_order",
            f"{PIP_INSTALL}::test_two_installed_distributions_claiming_one_name_are_both_refused",
            f"{ADV_LOADING}::test_strict_mode_raises_on_a_name_two_distributions_claim",
            f"{ADV_LOADING}::test_flagged_entry_points_are_refused_at_load_and_change_no_result",
        ),
        "a tool plugin declaring `wrapper=True`, `hookwrapper=True`, `tryfirst`, `trylast`, a "
        "misspelled hook": (
            f"{HOST}::test_wrappers_and_ordering_flags_are_refused",
            f"{HOST}::test_a_misspelled_hook_is_refused",
            f"{HOST}::test_a_plugin_registered_behind_the_hosts_back_changes_nothing",
            f"{ENTRY_POINTS}::test_broken_distributions_are_recorded_and_never_stop_the_rest",
            f"{ADV_LOADING}::test_a_refused_plugin_never_runs_and_never_changes_another_tools_result",
            f"{ADV_LOADING}::test_flagged_entry_points_are_refused_at_load_and_change_no_result",
        ),
        "a plugin registering further plugins while being imported": (
            f"{ENTRY_POINTS}::test_broken_distributions_are_recorded_and_never_stop_the_rest",
        ),
        "`execute` raises an exception whose `__str__`/`__repr__`, `__getattribute__`, "
        "`__traceback__`/`args`/`__notes__`/`__dict__` properties, instance dict, metaclass "
        "names, or megabyte `str`-subclass names raise or hang; in-process, in the timeout "
        "thread, from `@tool` structuring, in an isolated worker": (
            f"{HOSTILE_EXC}::test_a_hostile_exception_is_a_failed_result_and_none_of_its_code_runs",
            f"{HOSTILE_EXC}::test_an_exception_whose_instance_dict_is_hostile_is_read_without_it",
            f"{HOSTILE_EXC}::test_a_hostile_exception_from_structuring_is_an_invalid_arguments_result",
            f"{HOSTILE_EXC}::test_noted_reads_and_writes_notes_without_plugin_code",
            f"{HOSTILE_EXC}::test_read_exception_runs_no_plugin_code",
            f"{HOSTILE_EXC}::test_a_hostile_exception_in_an_isolated_tool_is_read_by_its_worker",
            f"{HOSTILE_EXC}::test_the_hang_guard_fails_on_a_hang",
        ),
        "an exception whose `__cause__`/`__context__` chain is a cycle or 100,000 long, whose "
        "traceback is 50,000 frames or names a FIFO as its source file, whose `__del__` raises "
        "or never returns": (
            f"{HOSTILE_EXC}::test_a_cause_and_context_chain_that_is_a_cycle_or_very_long_is_not_walked",
            f"{HOSTILE_EXC}::test_a_50000_frame_traceback_is_logged_bounded",
            f"{HOSTILE_EXC}::test_a_frame_whose_source_is_a_fifo_is_logged_without_reading_it",
            f"{HOSTILE_EXC}::test_an_exception_whose_del_raises_is_a_failed_result",
            f"{HOSTILE_EXC}::test_an_exception_whose_del_never_returns_does_not_hold_a_timed_call",
        ),
        "an argument type's validator raising cattrs' own exception group nested 60 deep, each "
        "level holding the next twice": (
            f"{HOSTILE_EXC}::test_an_exponential_group_of_structuring_errors_is_walked_bounded",
        ),
        "`KeyboardInterrupt` where it cannot be the user's Ctrl-C (the timeout thread, a worker "
        "thread, a subclass), `GeneratorExit`, a custom `BaseException`; in a playground run, "
        "its tool runner, or from the run's loop itself": (
            f"{BASE_EXC}::test_in_the_timeout_thread_every_base_exception_is_an_error_result",
            f"{BASE_EXC}::test_in_another_thread_every_base_exception_is_an_error_result",
            f"{BASE_EXC}::test_in_the_main_thread_only_an_exact_keyboard_interrupt_propagates",
            f"{BASE_EXC}::test_the_users_ctrl_c_propagates_from_a_call_in_the_main_thread",
            f"{BASE_EXC}::test_the_users_ctrl_c_while_waiting_for_a_timed_call_propagates",
            f"{BASE_EXC}::test_a_playground_run_whose_tool_raises_a_base_exception_closes_its_stream",
            f"{BASE_EXC}::test_the_tool_runner_answers_a_base_exception_with_an_error_result",
            f"{BASE_EXC}::test_a_run_whose_loop_raises_a_base_exception_ends_with_an_error_event",
        ),
        "a plugin whose `__dir__`, `__dict__` or `__getattribute__` answers differently each "
        "time, or whose instance changes its `__class__` while it is registered": (
            f"{HOSTILE_REG}::test_what_the_host_calls_and_pluggy_holds_is_what_was_checked",
            f"{HOSTILE_REG}::test_hookimpls_come_from_the_type_not_from_the_instance",
            f"{HOSTILE_REG}::test_the_refusals_see_every_kind_of_hookimpl_on_the_type",
            f"{HOSTILE_REG}::test_static_and_class_methods_are_hookimpls",
            f"{HOSTILE_REG}::test_a_module_plugin_is_read_from_its_own_dict",
        ),
        "`tool_spec()` raising or returning, or an import raising, an object whose class's "
        "metaclass makes its names code": (
            f"{HOSTILE_REG}::test_a_refused_spec_is_named_in_host_words",
            f"{HOSTILE_REG}::test_an_import_failure_is_named_in_host_words",
        ),
    },
    "Rendering and storage": {
        "artifact text with `</script>`, `<img onerror=…>`, `javascript:` URLs": (
            f"{BROWSER}::test_hostile_artifacts_render_as_text",
            f"{STATIC}::test_the_scripts_never_parse_markup",
            f"{STATIC}::test_the_page_has_no_inline_script_or_style",
            f"{HTTP}::test_security_headers_on_every_response",
        ),
        "RLO U+202E, zero-width, C1, ANSI escapes, NUL": (
            f"{BROWSER}::test_a_table_renders_exactly_the_cells_given",
            f"{CLI_RUNS}::test_show_prints_steps_exactly_as_stored_and_visibly",
            f"{CLI_RUNS}::test_list_escapes_stored_strings",
            f"{CLI_RUN}::test_run_on_the_openai_wire_escapes_model_bytes",
            f"{PIP_INSTALL}::test_cli_escapes_control_characters_from_tool_output",
            f"{ADV_STORAGE}::test_tools_run_shows_hostile_artifact_characters_visibly",
            f"{ADV_FINDINGS}::test_json_output_never_writes_raw_terminal_controls",
            f"{ADV_CLI}::test_a_run_its_decisions_and_the_store_show_hostile_bytes_visibly",
            f"{ADV_CLI}::test_the_demo_and_the_playground_show_load_warnings_visibly",
        ),
        "a canary in artifacts, labels, column names, exception text": (
            f"{ERROR_TEXT}::test_no_exception_text_or_type_name_reaches_a_provider",
            f"{OPENAI}::test_a_tool_round_on_the_wire",
            f"{ANTHROPIC}::test_a_tool_round_on_the_wire",
            f"{LOOP}::test_tool_content_reaches_the_next_request_and_artifacts_do_not",
            f"{CANARIES}::test_sweep[metadata]",
            f"{CANARIES}::test_sweep[none]",
            f"{AUDIT_LOOP}::test_a_run_is_recorded_and_settled_without_artifacts",
        ),
        "REDACTED: secrets under `password`/`X-Api-Key`/`refreshToken` deep in lists of dicts; "
        "bearer tokens, JWTs, PEM keys, AWS keys, URL credentials, `token=` values, card numbers "
        "(as str and as int) in free text": (
            f"{REDACTION}::test_values_under_sensitive_keys_are_masked_whole_deep_in_lists",
            f"{REDACTION}::test_each_secret_shape_is_masked",
            f"{REDACTION}::test_secrets_in_context_are_masked_and_context_kept",
            f"{REDACTION}::test_card_numbers_as_integers_are_masked",
            f"{REDACTION}::test_benign_text_is_kept",
            f"{CANARIES}::test_sweep[redacted]",
            f"{ADV_STORAGE}::test_redacted_masks_every_secret_shape_wherever_it_rides",
        ),
        "the redactor raising or meeting a pathological input": (
            f"{PRIVACY}::test_redactor_failure_falls_back_to_metadata_never_full",
            f"{PRIVACY}::test_redactor_refusing_a_value_falls_back_to_metadata",
            f"{PRIVACY}::test_redactor_meeting_a_pathologically_deep_value_falls_back_to_metadata",
            f"{REDACTION}::test_pathological_inputs_finish",
        ),
        "privacy level unset or invalid": (
            f"{PRIVACY}::test_unset_means_metadata",
            f"{PRIVACY}::test_invalid_environment_value_means_metadata_with_a_warning",
            f"{PRIVACY}::test_invalid_argument_means_metadata",
            f"{AUDIT_STORE}::test_privacy_defaults_to_environment_then_metadata",
            f"{HTTP}::test_unknown_privacy_level_is_metadata",
            f"{ADV_STORAGE}::test_an_unset_or_invalid_privacy_level_stores_metadata",
        ),
    },
}


# -- reading the rows ----------------------------------------------------------------------------

HEADER = ["input", "expected"]
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_SEPARATOR = re.compile(r"\|(\s*:?-+:?\s*\|)+")


def cells(line: str) -> list[str]:
    """The cells of one markdown table line (``| a | b |``), stripped; ``\\|`` is not a split."""
    inner = line.strip()
    inner = inner.removeprefix("|").removesuffix("|")
    return [cell.strip().replace("\\|", "|") for cell in _CELL_SPLIT.split(inner)]


def table_rows(text: str) -> list[tuple[str, str, str]]:
    """(section, input, expected) for every row of every table, in file order.

    Raises ``ValueError`` for a table that does not have the ``input | expected`` header, a row
    with another number of cells, or a table outside a ``##`` section.
    """
    rows: list[tuple[str, str, str]] = []
    section: str | None = None
    in_table = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            section, in_table = line[3:].strip(), False
            continue
        if not line.lstrip().startswith("|"):
            in_table = False
            continue
        if _SEPARATOR.fullmatch(line.strip()):
            continue
        row = cells(line)
        if not in_table:
            if row != HEADER or section is None:
                raise ValueError(f"line {number}: a table must open with | input | expected |")
            in_table = True
            continue
        if len(row) != 2:
            raise ValueError(f"line {number}: {len(row)} cells, not 2: {line!r}")
        rows.append((section, row[0], row[1]))
    return rows


@functools.cache
def rows_in_file() -> tuple[tuple[str, str, str], ...]:
    return tuple(table_rows(ROWS_FILE.read_text(encoding="utf-8")))


def row_name(section: str, cell: str) -> str:
    return f"[{section}] {cell}"


# -- resolving node ids --------------------------------------------------------------------------

_NODE_ID = re.compile(
    r"(?P<path>tests/(?:\w+/)*test_\w+\.py)::(?:(?P<cls>Test\w+)::)?(?P<name>test_\w+)"
    r"(?:\[(?P<params>.+)\])?"
)


@functools.cache
def functions_of(path: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """``name`` and ``Class::name`` -> definition, for every test function of a file."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"), filename=path)
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    found[f"{node.name}::{item.name}"] = item
    return found


def unresolved(node_id: str) -> str | None:
    """Why ``node_id`` names no test function, or ``None`` when it does."""
    match = _NODE_ID.fullmatch(node_id)
    if match is None:
        return "is not of the form tests/…/test_x.py::test_name[params]"
    path = match["path"]
    if not (ROOT / path).is_file():
        return "names a file that does not exist"
    key = f"{match['cls']}::{match['name']}" if match["cls"] else match["name"]
    function = functions_of(path).get(key)
    if function is None:
        return f"names no test function: the file has no {key}"
    if match["params"] is not None:
        arguments = function.args
        if not (arguments.args or arguments.kwonlyargs):
            return f"{key} takes no arguments, so it cannot be parametrized"
    return None


# -- the tests -----------------------------------------------------------------------------------


def test_the_rows_file_is_read() -> None:
    rows = rows_in_file()
    assert {section for section, _, _ in rows} == set(PINNED), "sections differ from the index"
    assert all(cell and expected for _, cell, expected in rows)
    keys = [(section, cell) for section, cell, _ in rows]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    assert not duplicates, f"rows with the same input cell in one section: {duplicates}"


def test_every_row_has_an_entry() -> None:
    missing = [
        row_name(section, cell)
        for section, cell, _ in rows_in_file()
        if cell not in PINNED.get(section, {})
    ]
    assert not missing, "rows of ADVERSARIAL.md that no test pins:\n" + "\n".join(missing)


def test_every_entry_names_a_row_of_the_file() -> None:
    in_file = {(section, cell) for section, cell, _ in rows_in_file()}
    stale = [
        row_name(section, cell)
        for section, entries in PINNED.items()
        for cell in entries
        if (section, cell) not in in_file
    ]
    assert not stale, "index entries for rows not in ADVERSARIAL.md:\n" + "\n".join(stale)


def test_every_node_id_resolves_to_a_test_function() -> None:
    problems = []
    for section, entries in PINNED.items():
        for cell, node_ids in entries.items():
            if not node_ids:
                problems.append(f"{row_name(section, cell)}: no test named")
            for node_id in node_ids:
                reason = unresolved(node_id)
                if reason is not None:
                    problems.append(f"{row_name(section, cell)}: {node_id} {reason}")
    assert not problems, "\n".join(problems)


# -- the checks can fail -------------------------------------------------------------------------


def test_the_parser_reads_sections_rows_and_escaped_pipes() -> None:
    text = (
        "# Title\n\n## One\n| input | expected |\n|---|---|\n| `a\\|b` | x |\n| c | y |\n\n"
        "## Two\n| input | expected |\n|:--|--:|\n| d | z |\n"
    )
    assert table_rows(text) == [("One", "`a|b`", "x"), ("One", "c", "y"), ("Two", "d", "z")]
    for bad in (
        "## S\n| a | b |\n|---|---|\n| c | d |\n",
        "## S\n| input | expected |\n|---|---|\n| c | d | e |\n",
        "| input | expected |\n|---|---|\n| c | d |\n",
    ):
        try:
            table_rows(bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad!r}")


def test_unresolvable_node_ids_are_reported() -> None:
    this = "tests/adversarial/test_every_row_is_pinned.py"
    assert unresolved(f"{this}::test_every_row_has_an_entry") is None
    assert unresolved(f"{CANARIES}::test_sweep[metadata]") is None
    assert "no test function" in str(unresolved(f"{this}::test_no_such_test"))
    assert "does not exist" in str(unresolved("tests/core/test_no_such_file.py::test_x"))
    assert "cannot be parametrized" in str(unresolved(f"{this}::test_every_row_has_an_entry[x]"))
    assert "is not of the form" in str(unresolved("test_every_row_has_an_entry"))
