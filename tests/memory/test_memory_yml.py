"""memory.yml: defaults when absent, every field honoured, loud errors naming the field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentscript.memory import MemoryService, MemoryServiceError, load_config, parse_config
from agentscript.memory.config import DEFAULT_CONFIG, config_path

pytest_plugins = ["memsvc_support"]


def write_config(memory_workspace: Path, text: str) -> Path:
    path = config_path(memory_workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n"])
def test_empty_documents_mean_the_defaults(text: str) -> None:
    assert parse_config(text) == DEFAULT_CONFIG


def test_defaults() -> None:
    config = DEFAULT_CONFIG
    assert config.scope == "workspace"
    assert config.layers == ("fact", "knowledge", "episodic")
    assert config.timeline.levels == ("day", "week", "month", "year")
    assert (config.digest.enabled, config.digest.max_bytes, config.digest.max_entries) == (
        True,
        3000,
        20,
    )
    assert (config.max_entries, config.max_entry_bytes) == (2000, 16384)


def test_a_missing_file_means_the_defaults(tmp_path: Path) -> None:
    assert load_config(tmp_path) == DEFAULT_CONFIG
    assert load_config(None) == DEFAULT_CONFIG


def test_partial_files_keep_the_other_defaults(tmp_path: Path) -> None:
    write_config(tmp_path, "scope: global-first\ndigest:\n  max_bytes: 1200\n")
    config = load_config(tmp_path)
    assert config.scope == "global-first"
    assert config.digest.max_bytes == 1200
    assert config.digest.max_entries == 20
    assert config.layers == DEFAULT_CONFIG.layers


def test_a_full_file_sets_every_field(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        """
scope: global
layers: [fact, episodic]
timeline: {day: true, week: false, month: true, year: false}
digest: {enabled: false, max_bytes: 512, max_entries: 5}
max_entries: 50
max_entry_bytes: 2048
""",
    )
    config = load_config(tmp_path)
    assert config.scope == "global"
    assert config.layers == ("fact", "episodic")
    assert config.timeline.levels == ("day", "month")
    assert (config.digest.enabled, config.digest.max_bytes, config.digest.max_entries) == (
        False,
        512,
        5,
    )
    assert (config.max_entries, config.max_entry_bytes) == (50, 2048)


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("scope: everywhere", "scope", "scope: Input should be 'workspace'"),
        ("layer: [fact]", "layer", "layer: unknown setting"),
        ("timeline: {weekly: true}", "timeline.weekly", "timeline.weekly: unknown setting"),
        ("digest: {max_bytes: '3000'}", "digest.max_bytes", "valid integer"),
        ("digest: {max_bytes: 10}", "digest.max_bytes", "greater than or equal to 256"),
        ("digest: {enabled: 1}", "digest.enabled", "valid boolean"),
        ("max_entries: 0", "max_entries", "greater than 0"),
        ("max_entries: 2.5", "max_entries", "valid integer"),
        ("layers: [summary]", "layers", "'summary' is not a layer"),
        ("layers: [fact, fact]", "layers", "lists a layer twice"),
        ("layers: fact", "layers", "valid tuple"),
        ("max_entry_bytes: 100", "max_entry_bytes", "greater than or equal to 1024"),
    ],
)
def test_invalid_fields_are_named(text: str, field: str, message: str) -> None:
    with pytest.raises(MemoryServiceError) as error:
        parse_config(text, "memory.yml")
    assert error.value.code == "invalid_config"
    assert error.value.field == field
    assert str(error.value).startswith(f"memory.yml: {field}: ")
    assert message in str(error.value)


def test_yaml_syntax_errors_give_the_position() -> None:
    with pytest.raises(MemoryServiceError, match=r"invalid YAML at line \d+, column \d+: "):
        parse_config("scope: memory_workspace\nlayers: [fact\n")


def test_a_top_level_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(MemoryServiceError, match="top level must be a mapping"):
        parse_config("- scope\n- global\n")


def test_several_problems_are_counted() -> None:
    with pytest.raises(MemoryServiceError, match=r"\(and 1 more problem\)"):
        parse_config("scope: nowhere\nmax_entries: -1\n")


def test_the_service_reads_the_workspace_file_and_names_it_in_errors(
    memory_workspace: Path, open_memory: Callable[..., MemoryService]
) -> None:
    path = write_config(memory_workspace, "digest: {max_entries: nine}\n")
    with pytest.raises(MemoryServiceError) as error:
        open_memory()
    assert str(error.value).startswith(f"{path}: digest.max_entries:")


def test_the_service_honours_layers(
    memory_workspace: Path, open_memory: Callable[..., MemoryService]
) -> None:
    write_config(memory_workspace, "layers: [fact]\n")
    memory = open_memory()
    assert memory.remember("Editor is vim", kind="fact", key="editor")["action"] == "created"
    with pytest.raises(MemoryServiceError, match="kind 'knowledge' is not enabled") as error:
        memory.remember("A lesson")
    assert error.value.code == "disabled_kind"


# The file of the seed's specification (§2.3), verbatim but for its `inject` section, which
# the seed adds in v0.2 with the same defaults.
SEED_FILE = """\
scope: workspace            # workspace | global-first | global
layers: [fact, knowledge, episodic]
auto_sink: true
timeline: { day: true, week: true, month: true, year: true, archive: keep }
weekly_template: ""          # 空 = 默认建议
max_entries: 2000
inject: { enabled: true, max_bytes: 3000, max_entries: 20 }
"""


def test_the_seeds_file_is_read_with_its_aliases_noted_in_check(
    memory_workspace: Path, open_memory: Callable[..., MemoryService]
) -> None:
    path = write_config(memory_workspace, SEED_FILE)
    memory = open_memory()
    config = memory.config
    assert (config.scope, config.layers, config.max_entries) == (
        "workspace",
        ("fact", "knowledge", "episodic"),
        2000,
    )
    assert config.auto_sink is True
    assert (config.timeline.archive, config.timeline.week_template) == ("keep", None)
    assert config.timeline.levels == ("day", "week", "month", "year")
    assert config.digest == DEFAULT_CONFIG.digest
    memory.remember("Editor is vim", kind="fact", key="editor")
    assert memory.recall("vim")["results"]
    assert memory.check()["notes"] == [
        f"{path}: `inject` is the seed's name of `digest`, read as it",
        f"{path}: `weekly_template` is the seed's name of `timeline.week_template`, read as it",
    ]


def test_seed_aliases_carry_their_values_and_may_not_repeat_a_setting() -> None:
    config = parse_config(
        'weekly_template: "## Shipped\\n## Open"\ninject: {max_bytes: 1200}\nauto_sink: false\n'
    )
    assert config.timeline.week_template == "## Shipped\n## Open"
    assert (config.digest.max_bytes, config.digest.max_entries) == (1200, 20)
    assert config.auto_sink is False
    with pytest.raises(MemoryServiceError, match="inject: sets digest a second time") as error:
        parse_config("inject: {max_bytes: 1200}\ndigest: {max_bytes: 900}\n")
    assert error.value.field == "inject"
    with pytest.raises(MemoryServiceError, match=r"weekly_template: sets timeline\.week_template"):
        parse_config("weekly_template: a\ntimeline: {week_template: b}\n")
    with pytest.raises(MemoryServiceError, match=r"timeline\.archive: Input should be 'keep'"):
        parse_config("timeline: {archive: shred}\n")


def test_archive_delete_removes_what_a_summary_replaces(
    memory_workspace: Path, open_memory: Callable[..., MemoryService]
) -> None:
    from agentscript.memory.compaction import compact

    write_config(
        memory_workspace, "timeline: {week: false, month: false, year: false, archive: delete}\n"
    )
    memory = open_memory()
    source = memory.remember("Deployed 2.3", kind="episodic", event_time="2026-05-01")["id"]

    report = compact(memory, None)

    (written,) = report.written
    assert written.summary_id is not None
    summary = memory.get(written.summary_id)
    assert summary["archive_ref"] == [source]
    with pytest.raises(MemoryServiceError) as error:
        memory.get(source)
    assert error.value.code == "not_found"
    assert memory.check()["findings"] == []
