"""`agentscript memory remember|recall|browse|stats|check|forget|history|digest|export|import`
for the long-term memory service: plain tables in a pipe, rich tables at a terminal, JSON with
--json, one-line errors; and `export`/`import` still serving memory resource URIs."""

from __future__ import annotations

import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agentscript.cli import memory_service
from agentscript.cli.main import main
from agentscript.memory import MemoryService


@pytest.fixture(autouse=True)
def default_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where a command without --db goes: never the home directory."""
    path = tmp_path / "default.db"
    monkeypatch.setenv("AGENTSCRIPT_MEMORY_DB", str(path))
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def where(workspace: Path, database: Path) -> list[str]:
    return ["--workspace", str(workspace), "--db", str(database)]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def memory(workspace: Path, database: Path) -> MemoryService:
    return MemoryService.open(workspace, database=database)


def remember(where: list[str], capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = cli(capsys, "memory", "remember", *args, *where, "--json")
    assert (code, err) == (0, ""), err
    result: dict[str, Any] = json.loads(out)
    return result


# ------------------------------------------------------------------------------ writing


def test_remember_prints_what_it_did(
    capsys: pytest.CaptureFixture[str], where: list[str], workspace: Path, database: Path
) -> None:
    code, out, err = cli(
        capsys, "memory", "remember", "Deploy with make release", "--tag", "deploy", *where
    )
    assert (code, err) == (0, "")
    action, entry_id, rest = out.split(" ", 2)
    assert action == "created"
    assert rest == "(knowledge, workspace): Deploy with make release\n"
    fact = remember(
        where,
        capsys,
        "User prefers short answers",
        "--kind",
        "fact",
        "--key",
        "style",
        "--scope",
        "global",
    )
    assert fact["action"] == "created" and fact["scope"] == "global" and fact["kind"] == "fact"
    with memory(workspace, database) as service:
        assert service.get(entry_id)["tags"] == ["deploy"]
        assert service.get(fact["id"])["key"] == "style"


def test_remember_reads_the_text_from_stdin_for_a_dash(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    where: list[str],
    workspace: Path,
    database: Path,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("# Release checklist\nTag, build, publish.\n"))
    created = remember(where, capsys, "-", "--title", "Release checklist")
    with memory(workspace, database) as service:
        assert service.get(created["id"])["body"] == "# Release checklist\nTag, build, publish."


def test_forget_archives_and_purges(
    capsys: pytest.CaptureFixture[str], where: list[str], workspace: Path, database: Path
) -> None:
    first = remember(where, capsys, "token abc", "--kind", "fact", "--key", "secret")
    second = remember(where, capsys, "token def", "--kind", "fact", "--key", "secret")
    kept = remember(where, capsys, "Keep the changelog short")
    assert cli(capsys, "memory", "forget", kept["id"], "--reason", "stale", *where) == (
        0,
        f"archived {kept['id']}\n",
        "",
    )
    assert cli(capsys, "memory", "forget", kept["id"], *where)[1] == (
        f"already archived {kept['id']}\n"
    )
    code, out, _ = cli(capsys, "memory", "forget", second["id"], "--purge", *where)
    assert code == 0
    assert out == f"purged 2 entries: {', '.join(sorted([first['id'], second['id']]))}\n"
    code, out, _ = cli(capsys, "memory", "forget", kept["id"], "--purge", *where, "--json")
    assert json.loads(out) == {
        "id": kept["id"],
        "action": "purged",
        "archived": True,
        "purged": [kept["id"]],
        "summaries_removed": [],
        "restored": [],
    }
    with memory(workspace, database) as service:
        assert service.stats()["active"] + service.stats()["archived"] == 0


# ------------------------------------------------------------------------------ reading


def test_recall_prints_a_plain_table_when_piped_and_json_on_request(
    capsys: pytest.CaptureFixture[str], where: list[str]
) -> None:
    made = remember(where, capsys, "Deploy with make release", "--tag", "deploy")
    code, out, err = cli(capsys, "memory", "recall", "how do we deploy", *where)
    assert (code, err) == (0, "")
    header, row = out.splitlines()
    assert header.split() == [
        "RELEVANCE", "SCORE", "KIND", "DATE", "TITLE", "TAGS", "SCOPE", "ID"
    ]  # fmt: skip
    assert row.startswith("1.00 ")  # "deploy", the query's one searchable word, is there
    assert "knowledge" in row and "Deploy with make release  deploy  workspace" in row
    assert row.endswith(made["id"])
    assert "│" not in out and "\x1b" not in out
    code, out, _ = cli(capsys, "memory", "recall", "deploy", "--kind", "fact", *where)
    assert out == "no memories found\n"
    code, out, _ = cli(capsys, "memory", "recall", "deploy", *where, "--json")
    result = json.loads(out)
    assert result["count"] == 1 and result["results"][0]["id"] == made["id"]
    code, out, err = cli(capsys, "memory", "recall", "what is it", *where)
    assert out == "no memories found\n"
    assert err == "note: the query has no searchable words (only stopwords or symbols)\n"


def test_tables_are_drawn_with_rich_at_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, where: list[str]
) -> None:
    made = remember(where, capsys, "Use [bold] brackets literally", "--tag", "docs")
    monkeypatch.setattr(memory_service, "_at_terminal", lambda: True)
    code, out, _ = cli(capsys, "memory", "recall", "brackets", *where)
    assert code == 0
    assert "┃ SCORE" in out and "│" in out
    assert "[bold]" in out
    assert made["id"][:8] in out
    code, out, _ = cli(capsys, "memory", "browse", *where)
    assert "(1 entry)" in out and "━" in out


def test_browse_groups_by_bucket(
    capsys: pytest.CaptureFixture[str], workspace: Path, where: list[str]
) -> None:
    # Reads compact ended days by default; this test looks at the days themselves.
    (workspace / ".agentscript").mkdir(exist_ok=True)
    (workspace / ".agentscript" / "memory.yml").write_text(
        "timeline: {day: false, week: false, month: false, year: false}\n"
    )
    remember(where, capsys, "Rolled back 2.3", "--kind", "episodic", "--event-time", "2026-05-04")
    remember(where, capsys, "Shipped 2.4", "--kind", "episodic", "--event-time", "2026-05-06")
    remember(where, capsys, "Planned 2.5", "--kind", "episodic", "--event-time", "2026-05-06")
    code, out, _ = cli(
        capsys, "memory", "browse", *where, "--since", "2026-05", "--until", "2026-05"
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Wednesday 6 May 2026 (2 entries)"
    assert lines[1].split() == ["KIND", "TITLE", "TAGS", "ID"]
    assert lines[4] == "Monday 4 May 2026 (1 entry)"
    assert lines[-1] == "page 1 of 1, 3 entries"
    code, out, _ = cli(capsys, "memory", "browse", "--by", "month", *where, "--json")
    result = json.loads(out)
    assert [group["bucket"] for group in result["groups"]] == ["2026-05"]
    code, out, _ = cli(capsys, "memory", "browse", "--since", "2030-01-01", *where)
    assert out == "no memories found\n"


def test_stats_check_history_and_digest(
    capsys: pytest.CaptureFixture[str], where: list[str], workspace: Path
) -> None:
    remember(where, capsys, "User prefers short answers", "--kind", "fact", "--key", "style")
    remember(where, capsys, "User prefers long answers", "--kind", "fact", "--key", "style")
    code, out, _ = cli(capsys, "memory", "stats", *where)
    assert code == 0
    header, mine, shared = out.splitlines()
    assert header.split() == [
        "SCOPE",
        "ACTIVE",
        "ARCHIVED",
        "SUPERSEDED",
        "FACT",
        "KNOWLEDGE",
        "EPISODIC",
        "SUMMARY",
        "ROOM",
    ]
    assert mine.split() == ["workspace", "1", "1", "1", "1", "0", "0", "0", "1999"]
    assert shared.split()[:2] == ["global", "0"]
    stats = json.loads(cli(capsys, "memory", "stats", *where, "--json")[1])
    assert stats["workspace"] == str(workspace.resolve())

    assert cli(capsys, "memory", "check", *where) == (
        0,
        "ok: no problems in workspace, global\n",
        "",
    )
    code, out, _ = cli(capsys, "memory", "history", "style", *where)
    lines = out.splitlines()
    assert lines[0] == "key style"
    assert [line.split()[0] for line in lines[2:]] == ["active", "superseded"]
    history = json.loads(cli(capsys, "memory", "history", "STYLE", *where, "--json")[1])
    assert [version["status"] for version in history["versions"]] == ["active", "superseded"]

    code, out, _ = cli(capsys, "memory", "digest", *where)
    assert out.startswith("<memory-digest ")
    assert "- [fact style, " in out and "User prefers long answers" in out
    digest = json.loads(cli(capsys, "memory", "digest", "--max-bytes", "300", *where, "--json")[1])
    assert digest["bytes"] <= 300


def test_check_reports_findings_and_fails_on_errors(
    capsys: pytest.CaptureFixture[str], where: list[str], workspace: Path
) -> None:
    remember(where, capsys, "Deploy steps", "--kind", "fact")
    remember(where, capsys, "Deploy steps", "--kind", "fact")
    code, out, _ = cli(capsys, "memory", "check", *where)
    assert code == 0
    header, row = out.splitlines()
    assert header.split() == ["SEVERITY", "CODE", "SCOPE", "MESSAGE"]
    assert row.startswith("warning   duplicate_title  workspace  2 active fact entries")
    (workspace / ".agentscript").mkdir()
    (workspace / ".agentscript" / "memory.yml").write_text("max_entries: 1\n")
    code, out, _ = cli(capsys, "memory", "check", *where, "--json")
    assert code == 1
    assert {finding["code"] for finding in json.loads(out)["findings"]} == {
        "duplicate_title",
        "over_limit",
    }


def test_stats_by_week_and_check_suggestions_at_the_command_line(
    capsys: pytest.CaptureFixture[str], where: list[str]
) -> None:
    # Today's entries: the real clock runs, and an ended day would be compacted on the read.
    for number in range(3):
        remember(where, capsys, f"Deploy number {number}", "--kind", "episodic", "--tag", "deploy")
    today = datetime.now().astimezone().date()
    week = today.isocalendar()
    code, out, _ = cli(capsys, "memory", "stats", *where, "--by", "week")
    assert code == 0
    assert out.splitlines()[3:] == [
        "workspace by week",
        "WEEK      ENTRIES",
        f"{week.year}-W{week.week:02d}  3",
        "global: no active entries",
    ]
    code, out, _ = cli(capsys, "memory", "stats", *where, "--by", "day", "--scope", "global")
    assert out.splitlines()[2:] == ["global: no active entries"]
    code, out, _ = cli(capsys, "memory", "check", *where)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("ok: no problems in workspace, global")
    assert lines[1:3] == ["What to distil", "SIGNAL           SCOPE      SUGGESTION"]
    assert lines[3].startswith("recurring_topic  workspace  3 episodes are tagged deploy")


def test_sink_reads_session_events_and_prints_the_notice(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    where: list[str],
    workspace: Path,
    database: Path,
) -> None:
    lines = [
        {"type": "message", "session": "s-1", "text": "the firehose has more than this"},
        {"type": "compaction/start", "session": "s-1"},
        {"type": "compaction/summary", "session": "s-1", "summary": "Fixed the release job"},
        {"type": "compaction/end", "session": "s-1"},
        {"type": "compaction/start", "session": "s-2"},
        {"type": "compaction/end", "session": "s-2", "error": "cancelled"},
    ]
    stream = "\n".join(json.dumps(line) for line in lines) + "\nnot json\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(stream))
    code, out, err = cli(capsys, "memory", "sink", *where)
    assert code == 1
    (notice,) = out.splitlines()
    assert notice.startswith("Your context was compacted.")
    assert err.splitlines() == [
        "no checkpoint for session s-2: the compaction failed: cancelled",
        "stdin:7: not JSON: Expecting value: line 1 column 1 (char 0)",
    ]
    with memory(workspace, database) as service:
        (hit,) = service.recall(tags=["compaction"])["results"]
    assert hit["body"] == "Fixed the release job" and hit["id"] in notice
    monkeypatch.setattr("sys.stdin", io.StringIO(stream))
    code, out, _ = cli(capsys, "memory", "sink", *where, "--json")
    outcomes = [json.loads(line) for line in out.splitlines()]
    assert [item["action"] for item in outcomes] == [
        "started",
        "noted",
        "exists",
        "started",
        "discarded",
    ]


# ------------------------------------------------------------------------------- errors


def test_errors_are_one_line_with_exit_code_1(
    capsys: pytest.CaptureFixture[str], where: list[str], workspace: Path, tmp_path: Path
) -> None:
    assert cli(capsys, "memory", "forget", "nope", *where) == (
        1,
        "",
        f"no entry 'nope' in scope {workspace.resolve()} or global\n",
    )
    code, out, err = cli(capsys, "memory", "recall", "x", "--since", "someday", *where)
    assert (code, out) == (1, "")
    assert len(err.splitlines()) == 1 and err.startswith("since")
    missing = tmp_path / "missing"
    assert cli(capsys, "memory", "stats", "--workspace", str(missing)) == (
        1,
        "",
        f"Workspace {missing} is not a directory\n",
    )
    code, _, err = cli(capsys, "memory", "remember", "x", "--kind", "summary", *where)
    assert code == 1 and "'summary' is not one of" in err


def test_without_db_the_environment_names_the_database(
    capsys: pytest.CaptureFixture[str], workspace: Path, default_database: Path
) -> None:
    remember(["--workspace", str(workspace)], capsys, "Goes where the variable says")
    with memory(workspace, default_database) as service:
        assert service.stats()["active"] == 1


# ------------------------------------------------------------------------ export/import


def test_export_and_import_keep_ids_and_skip_duplicates(
    capsys: pytest.CaptureFixture[str],
    where: list[str],
    workspace: Path,
    database: Path,
    tmp_path: Path,
) -> None:
    first = remember(where, capsys, "style short", "--kind", "fact", "--key", "style")
    second = remember(where, capsys, "style long", "--kind", "fact", "--key", "style")
    shared = remember(where, capsys, "Global preference", "--scope", "global")
    code, out, err = cli(capsys, "memory", "export", *where)
    assert (code, err) == (0, "exported 3 entries\n")
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["id"] for line in lines] == [first["id"], second["id"], shared["id"]]
    assert lines[0]["superseded_by"] == second["id"]

    target = tmp_path / "backup.jsonl"
    assert cli(capsys, "memory", "export", str(target), "--scope", "global", *where)[2] == (
        "exported 1 entry\n"
    )
    assert [json.loads(line)["id"] for line in target.read_text().splitlines()] == [shared["id"]]
    cli(capsys, "memory", "export", str(target), *where)

    copy = ["--workspace", str(workspace), "--db", str(tmp_path / "copy.db")]
    assert cli(capsys, "memory", "import", str(target), *copy) == (0, "", "added 3, skipped 0\n")
    assert cli(capsys, "memory", "import", str(target), *copy, "--json") == (
        0,
        '{\n  "added": 0,\n  "skipped": 3\n}\n',
        "",
    )
    with memory(workspace, database) as original, memory(workspace, tmp_path / "copy.db") as back:
        for entry in (first, second, shared):
            assert back.get(entry["id"]) == original.get(entry["id"])
        assert [v["id"] for v in back.history("style")["versions"]] == [second["id"], first["id"]]
        assert back.recall("preference")["results"][0]["id"] == shared["id"]


def test_export_all_scopes_and_import_from_stdin(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    where: list[str],
    workspace: Path,
    tmp_path: Path,
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    database = where[-1]
    remember(where, capsys, "Mine")
    remember(["--workspace", str(other), "--db", database], capsys, "Theirs")
    assert cli(capsys, "memory", "export", *where)[2] == "exported 1 entry\n"
    code, out, err = cli(capsys, "memory", "export", "--all", *where)
    assert err == "exported 2 entries\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(out))
    copy = ["--workspace", str(workspace), "--db", str(tmp_path / "copy.db")]
    assert cli(capsys, "memory", "import", *copy) == (0, "", "added 2, skipped 0\n")
    code, _, err = cli(capsys, "memory", "export", "--all", "--scope", "global", *where)
    assert (code, err) == (1, "Use either --scope or --all, not both\n")


def test_a_bad_import_line_imports_nothing(
    capsys: pytest.CaptureFixture[str], where: list[str], tmp_path: Path
) -> None:
    remember(where, capsys, "Good entry")
    _, out, _ = cli(capsys, "memory", "export", *where)
    good = json.loads(out)
    source = tmp_path / "import.jsonl"
    copy = ["--workspace", str(tmp_path / "project"), "--db", str(tmp_path / "copy.db")]

    def refused(lines: list[Any]) -> str:
        source.write_text("".join(line + "\n" for line in lines))
        code, out, err = cli(capsys, "memory", "import", str(source), *copy)
        assert (code, out) == (1, "")
        return err

    valid = json.dumps(good)
    assert (
        refused([valid, "{not json"])
        == f"{source}:2: not valid JSON: Expecting property name enclosed in double quotes\n"
    )
    assert refused([valid, json.dumps({**good, "kind": "note"})]) == (
        f"{source}:2: kind: Input should be 'fact', 'knowledge', 'episodic' or 'summary'\n"
    )
    assert (
        refused([json.dumps({**good, "colour": "red"})]) == f"{source}:1: colour: unknown field\n"
    )
    assert refused([json.dumps({**good, "created_at": "2026-05-06"})]) == (
        f"{source}:1: created_at: '2026-05-06' is not a stored timestamp "
        "(2026-05-04T09:15:00.000Z)\n"
    )
    assert refused([json.dumps({**good, "scope": "project"})]) == (
        f"{source}:1: scope: scope 'project' must be 'global' or an absolute workspace path\n"
    )
    assert refused([json.dumps({**good, "bucket": "2026-W19"})]) == (
        f"{source}:1: bucket: '2026-W19' is not a day bucket\n"
    )
    # A lone surrogate (issue 13, finding 12) is refused by line and field, not by the store.
    assert refused([valid, json.dumps({**good, "id": "other", "body": "x\ud800"})]) == (
        f"{source}:2: body: body contains a lone surrogate (U+D800) at character 2; text must "
        "be valid Unicode\n"
    )
    with memory(tmp_path / "project", tmp_path / "copy.db") as service:
        assert service.stats()["active"] == 0


def test_an_import_that_would_break_a_key_imports_nothing(
    capsys: pytest.CaptureFixture[str], where: list[str], workspace: Path, tmp_path: Path
) -> None:
    remember(where, capsys, "Unrelated note")
    remember(where, capsys, "value one", "--kind", "fact", "--key", "setting")
    _, out, _ = cli(capsys, "memory", "export", *where)
    source = tmp_path / "export.jsonl"
    source.write_text(out)
    copy = ["--workspace", str(workspace), "--db", str(tmp_path / "copy.db")]
    remember(copy, capsys, "value two", "--kind", "fact", "--key", "setting")
    code, _, err = cli(capsys, "memory", "import", str(source), *copy)
    assert code == 1
    assert err == (
        f"{source}:2: scope {workspace.resolve()} already has an active entry with key "
        "'setting'; nothing was imported\n"
    )
    with memory(workspace, tmp_path / "copy.db") as service:
        assert service.stats()["active"] == 1


def test_resource_uris_still_export_and_import_resources(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    where: list[str],
    default_database: Path,
) -> None:
    monkeypatch.chdir(tmp_path)
    records = tmp_path / "records.jsonl"
    envelope = {
        "id": "a",
        "created_at": "2026-01-01T00:00:00.000Z",
        "updated_at": "2026-01-01T00:00:00.000Z",
        "record": {"kind": "lesson", "text": "Use fixtures"},
    }
    records.write_text(json.dumps(envelope) + "\n")
    uri = "sqlite://store.db#team"
    assert cli(capsys, "memory", "import", uri, str(records)) == (0, "", "added 1, skipped 0\n")
    monkeypatch.setattr("sys.stdin", io.StringIO(records.read_text()))
    assert cli(capsys, "memory", "import", uri) == (0, "", "added 0, skipped 1\n")
    code, out, _ = cli(capsys, "memory", "export", uri)
    assert code == 0
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["a"]
    assert cli(capsys, "memory", "export", uri, "--db", "x.db") == (
        1,
        "",
        "--db is for the memory service, not for a resource URI\n",
    )
    assert cli(capsys, "memory", "import", uri, str(records), *where)[0] == 1
    assert cli(capsys, "memory", "import", str(records), str(records), *where) == (
        1,
        "",
        f"Unexpected argument '{records}': a service import reads one FILE (a second argument "
        "is for resource URIs)\n",
    )
    # The resource commands never opened the service's database.
    assert not default_database.exists()


def test_import_remembers_lines_of_remember_arguments_in_batches(
    capsys: pytest.CaptureFixture[str],
    workspace: Path,
    database: Path,
    where: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("agentscript.memory.service.MAX_BATCH_ITEMS", 2)
    turns = [
        {"text": "Did you try pottery?", "kind": "episodic", "source": {"session": "s1"}},
        {"text": "Yes, a blue bowl.", "kind": "episodic", "source": {"session": "s1"}},
        {"text": "blue", "kind": "fact", "key": "colour"},
        {"text": "green", "kind": "fact", "key": "colour"},
        {"text": "Did you try pottery?", "kind": "episodic"},
    ]
    source = tmp_path / "turns.jsonl"
    source.write_text("".join(json.dumps(turn) + "\n" for turn in turns))
    assert cli(capsys, "memory", "import", str(source), *where) == (
        0,
        "",
        "remembered 5 (created 3, updated 1, merged 1)\n",
    )
    with memory(workspace, database) as stored:
        hits = stored.recall("pottery")["results"]
        assert [hit["body"] for hit in hits] == ["Did you try pottery?", "Yes, a blue bowl."]
        assert stored.history("colour")["versions"][0]["body"] == "green"
    source.write_text(
        json.dumps({"text": "fine"})
        + "\n"
        + json.dumps({"text": "fine too"})
        + "\n"
        + json.dumps({"text": "bad", "kind": "opinion"})
        + "\n"
    )
    code, out, err = cli(capsys, "memory", "import", str(source), *where)
    assert (code, out) == (1, "")
    assert err.startswith(f"{source}:3: items[0].kind: ")
    assert err.endswith("(the 2 lines before its batch were stored)\n")


def test_an_import_refuses_an_entry_remember_would_refuse_as_too_large(
    capsys: pytest.CaptureFixture[str], where: list[str], workspace: Path, tmp_path: Path
) -> None:
    remember(where, capsys, "A small note")
    _, out, _ = cli(capsys, "memory", "export", *where)
    exported = json.loads(out.splitlines()[0])
    exported["body"] = "x" * 2_000_000
    source = tmp_path / "export.jsonl"
    source.write_text(json.dumps(exported) + "\n")
    copy = ["--workspace", str(workspace), "--db", str(tmp_path / "copy.db")]
    remember(copy, capsys, "Kept note")
    code, _, err = cli(capsys, "memory", "import", str(source), *copy)
    assert code == 1
    assert err.startswith(f"{source}:1: the entry is 2,000,")
    assert "the limit is 16,384 bytes (max_entry_bytes in memory.yml)" in err
    with memory(workspace, tmp_path / "copy.db") as service:
        assert service.stats()["active"] == 1  # what was stored stays
