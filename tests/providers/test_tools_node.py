"""`node:` and `npm:` tools through the system's Node.js: the agentscript.npm.json registry at
check and at run time, positional calls, promises, JSON-safe values, versions, errors without
stack traces, the deadline, approvals, `parallel for` and replay. A package is written into the
workspace's node_modules by the test (nothing is installed)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agentscript.cli.main import main

pytestmark = pytest.mark.node

PACKAGE = """
const fs = require("node:fs");
module.exports = {
  shout: (text, times) => text.toUpperCase() + "!".repeat(times || 1),
  later: async (n) => n * 2,
  now: () => ({ when: new Date(0) }),
  fail: () => { throw new Error("boom"); },
  hang: () => new Promise(() => { setInterval(() => {}, 1000); }),
  note: (text) => { fs.appendFileSync("calls.log", text + "\\n"); return text.length; },
};
"""

ESM_PACKAGE = """export function words(text) { return text.split(" "); }
export const answer = 42;
"""

PROGRAM = """import tool Path from "node:path"
import tool Lib from "npm:shouty"
import tool Esm from "npm:@acme/esm-words"

agent Tools {
    main func(input { text: string }) {
        joined = Path.join("a", "b")
        sep = Path.sep
        loud = Lib.shout(input.text, 2)
        doubled = Lib.later(21)
        words = Esm.words(input.text)
        kept = Lib.note(input.text)
        return { joined: joined, sep: sep, loud: loud, doubled: doubled, words: words, kept: kept }
    }
}
"""

REGISTRY = {
    "allow": {
        "node": ["path"],
        "npm": {"shouty": {"version": "^1.2"}, "@acme/esm-words": {}},
    }
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    shouty = tmp_path / "node_modules" / "shouty"
    shouty.mkdir(parents=True)
    (shouty / "package.json").write_text(json.dumps({"name": "shouty", "version": "1.4.0"}))
    (shouty / "index.js").write_text(PACKAGE)
    esm = tmp_path / "node_modules" / "@acme" / "esm-words"
    esm.mkdir(parents=True)
    (esm / "package.json").write_text(
        json.dumps({"name": "@acme/esm-words", "version": "0.1.0", "type": "module",
                    "exports": "./index.js"})
    )  # fmt: skip
    (esm / "index.js").write_text(ESM_PACKAGE)
    (tmp_path / "agentscript.npm.json").write_text(json.dumps(REGISTRY))
    (tmp_path / "tools.as").write_text(PROGRAM)
    return tmp_path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def run(
    capsys: pytest.CaptureFixture[str], workspace: Path, *extra: str, source: str = PROGRAM
) -> tuple[int, str, str]:
    (workspace / "tools.as").write_text(source)
    return cli(
        capsys, "run", str(workspace / "tools.as"), "--input", '{"text": "hi there"}',
        "--no-learn", "--quiet", *extra,
    )  # fmt: skip


def test_node_modules_and_npm_packages_answer_positional_calls(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    assert cli(capsys, "check", str(workspace / "tools.as"))[0] == 0
    code, out, err = run(capsys, workspace, "--mock", "--approve", "auto")
    assert code == 0, err
    assert json.loads(out) == {
        "joined": "a/b",
        "sep": "/",
        "loud": "HI THERE!!",
        "doubled": 42,
        "words": ["hi", "there"],
        "kept": 8,
    }
    assert (workspace / "calls.log").read_text() == "hi there\n"


def test_imports_the_registry_does_not_allow_are_refused_at_check_and_run(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    (workspace / "agentscript.npm.json").write_text(json.dumps({"allow": {"node": ["path"]}}))
    code, out, err = cli(capsys, "check", str(workspace / "tools.as"))
    assert code != 0
    assert "Package 'shouty' is not allowed by agentscript.npm.json" in out + err
    assert "tools.as:2:1" in out + err
    (workspace / "agentscript.npm.json").unlink()
    code, out, err = cli(capsys, "check", str(workspace / "tools.as"))
    assert "Node module 'path' is not allowed by agentscript.npm.json" in out + err
    code, _, err = run(capsys, workspace, "--mock", "--approve", "auto")
    assert code != 0 and "is not allowed by agentscript.npm.json" in err
    assert not (workspace / "calls.log").exists()


def test_a_sub_path_needs_its_own_entry(tmp_path: Path) -> None:
    from agentscript.providers.tools.npm_allow import NpmRegistry
    from agentscript.runtime.errors import ExecutionError

    (tmp_path / "agentscript.npm.json").write_text(
        json.dumps({"allow": {"npm": {"@acme/util": {"exports": ["json-schema"]}}}})
    )
    registry = NpmRegistry.read(tmp_path)
    assert registry.check("npm:@acme/util/json-schema").specifier == "@acme/util/json-schema"
    with pytest.raises(ExecutionError, match="Sub-path 'other' of package '@acme/util'"):
        registry.check("npm:@acme/util/other")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("Lib.now()", "Npm tool 'Lib.now' returned invalid value at result.when: class instance"),
        ("Lib.fail()", "Npm tool 'Lib.fail' failed: boom"),
        ("Lib.toYaml(1)", "Npm tool 'Lib.toYaml' failed: Unknown method 'Lib.toYaml'"),
    ],
)
def test_what_node_cannot_answer_is_a_located_error_without_a_stack(
    capsys: pytest.CaptureFixture[str], workspace: Path, call: str, message: str
) -> None:
    source = PROGRAM.replace("Lib.note(input.text)", call)
    code, _, err = run(capsys, workspace, "--mock", "--approve", "auto", source=source)
    assert code != 0
    assert message in err
    assert "tools.as:12:" in err
    assert "at Object" not in err and "node:internal" not in err and "Traceback" not in err


def test_an_installed_version_outside_the_range_is_refused(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    manifest = workspace / "node_modules" / "shouty" / "package.json"
    manifest.write_text(json.dumps({"name": "shouty", "version": "2.0.0"}))
    code, _, err = run(capsys, workspace, "--mock", "--approve", "auto")
    assert code != 0
    assert "Package 'shouty' installed version '2.0.0' does not satisfy '^1.2'" in err


def test_a_hung_call_is_stopped_by_the_runs_deadline(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    source = PROGRAM.replace("Lib.note(input.text)", "Lib.hang()")
    code, _, err = run(
        capsys, workspace, "--mock", "--approve", "auto", "--max-seconds", "2", source=source
    )
    assert code != 0
    assert "Run budget exceeded: more than 2 seconds (--max-seconds)" in err


def test_calls_are_effectful_asked_for_and_refused_in_parallel_for(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    code, _, err = run(capsys, workspace, "--mock", "--approve", "deny")
    assert code != 0 and "refused" in err.lower()
    assert not (workspace / "calls.log").exists()
    source = PROGRAM.replace(
        "kept = Lib.note(input.text)", "kept = parallel for t in [1] max 2 { Lib.note(t) }"
    )
    (workspace / "tools.as").write_text(source)
    code, out, err = cli(capsys, "check", str(workspace / "tools.as"))
    assert code != 0
    assert "effectful operation 'Lib.note' is not allowed inside parallel for" in out + err


def test_a_replayed_run_calls_no_node_function(
    capsys: pytest.CaptureFixture[str], workspace: Path, tmp_path: Path
) -> None:
    code, recorded, err = run(capsys, workspace, "--mock", "--approve", "auto")
    assert code == 0, err
    code, replayed, err = run(capsys, workspace, "--replay", "last", "--approve", "deny")
    assert code == 0, err
    assert replayed == recorded
    cassette = tmp_path / "cassettes" / "tools.jsonl"
    code, _, err = cli(
        capsys, "runs", "export", "last", "--cassette", str(cassette),
        "--workspace", str(workspace),
    )  # fmt: skip
    assert code == 0, err
    assert "6 tool calls" in err
    code, replayed, err = run(
        capsys, workspace, "--replay", str(cassette), "--no-journal", "--approve", "deny"
    )
    assert code == 0, err
    assert replayed == recorded
    assert (workspace / "calls.log").read_text() == "hi there\n"  # called once, not thrice


def test_the_user_is_asked_before_a_node_call_runs(workspace: Path) -> None:
    import agentscript
    from agentscript.app.configuration import RunConfig
    from agentscript.providers.tools.approvals import Answer, ApprovalRequest

    asked: list[tuple[str, str]] = []

    def ask(approval: ApprovalRequest) -> Answer:
        asked.append((approval.label, approval.risk))
        return "yes" if approval.label != "Lib.note" else "no"

    config = RunConfig(
        model="mock", approve="ask", ask_user=ask, workspace=str(workspace), learn=False
    )
    loaded = agentscript.load(str(workspace / "tools.as"))
    with pytest.raises(agentscript.ExecutionError, match=r"Lib\.note"):
        agentscript.run(loaded, {"text": "hi there"}, config)

    labels = ["Path.join", "Path.sep", "Lib.shout", "Lib.later", "Esm.words", "Lib.note"]
    assert asked == [(label, "effect") for label in labels]
    assert not (workspace / "calls.log").exists()


SPAWNING = """
const { spawn } = require("node:child_process");
const fs = require("node:fs");
module.exports = {
  start: () => {
    const child = spawn("sleep", ["600"], { stdio: "ignore" });
    fs.writeFileSync("child.pid", String(child.pid));
    return child.pid;
  },
};
"""


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its parent to reap it has stopped running)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to see the child")
def test_what_a_module_starts_is_killed_when_its_call_ends(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    spawner = workspace / "node_modules" / "spawner"
    spawner.mkdir()
    (spawner / "package.json").write_text(json.dumps({"name": "spawner", "version": "1.0.0"}))
    (spawner / "index.js").write_text(SPAWNING)
    registry = {"allow": {"npm": {"spawner": {}}}}
    (workspace / "agentscript.npm.json").write_text(json.dumps(registry))
    source = (
        'import tool S from "npm:spawner"\n\nagent A {\n    main func(input { text: string }) '
        "{\n        return S.start()\n    }\n}\n"
    )
    code, out, err = run(capsys, workspace, "--mock", "--approve", "auto", source=source)
    assert code == 0, err
    pid = int(out)
    assert pid == int((workspace / "child.pid").read_text())
    # SIGKILL was sent before the call returned; the kernel ends the process right after.
    for _ in range(100):
        if not _alive(pid):
            break
        time.sleep(0.05)
    assert not _alive(pid)


def test_without_node_the_error_says_what_to_install(
    capsys: pytest.CaptureFixture[str], workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(workspace / "no-bin"))
    code, _, err = run(capsys, workspace, "--mock", "--approve", "auto")
    assert code != 0
    assert "needs Node.js, and no `node` is on PATH: install Node.js" in err


OWN_MODULE = """
setInterval(() => {}, 1000);  // an open timer must not hold the call
module.exports = {
  title: (text) => { console.log("chatter"); return text.split(" ").map(
    (word) => word[0].toUpperCase() + word.slice(1)).join(" "); },
  big: () => "x".repeat(2 * 1024 * 1024),
  version: "3.1.0",
};
"""

OWN_PROGRAM = """import tool Path from "node:path"
import tool Text from "npm:text"

agent Own {
    main func(input { text: string }) {
        return { title: Text.title(input.text), sep: Path.sep, version: Text.version }
    }
}
"""


@pytest.fixture
def own_module(workspace: Path) -> Path:
    """A module of the workspace's own (lib/text), linked into node_modules as `npm install
    ./lib/text` links it."""
    folder = workspace / "lib" / "text"
    folder.mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({"name": "text", "version": "3.1.0"}))
    (folder / "index.js").write_text(OWN_MODULE)
    (workspace / "node_modules" / "text").symlink_to(folder, target_is_directory=True)
    registry = {"allow": {"node": ["path"], "npm": {"text": {"version": "~3.1"}}}}
    (workspace / "agentscript.npm.json").write_text(json.dumps(registry))
    return workspace


def test_a_module_of_the_workspace_answers_calls_and_property_reads(
    capsys: pytest.CaptureFixture[str], own_module: Path
) -> None:
    (own_module / "tools.as").write_text(OWN_PROGRAM)
    assert cli(capsys, "check", str(own_module / "tools.as"))[0] == 0
    code, out, err = run(
        capsys, own_module, "--mock", "--approve", "auto", "--max-seconds", "60",
        source=OWN_PROGRAM,
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out) == {"title": "Hi There", "sep": "/", "version": "3.1.0"}


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("Text.title", "'Text.title' is a function and cannot be read as a property"),
        ("Text.title(Path)", "argument at position 0 expects JSON-safe value at argument, got "
         "tool binding"),
        ("Text.title([1, { a: Text }])", "at argument[1].a, got tool binding"),
        ("Text.big()", "Npm tool 'Text.big' answered more than 1048576 bytes"),
    ],
)  # fmt: skip
def test_what_cannot_cross_is_a_located_error(
    capsys: pytest.CaptureFixture[str], own_module: Path, expression: str, message: str
) -> None:
    source = OWN_PROGRAM.replace("Text.title(input.text)", expression)
    code, _, err = run(capsys, own_module, "--mock", "--approve", "auto", source=source)
    assert code != 0
    assert message in err
    assert "tools.as:6:" in err and "Traceback" not in err


def test_a_dry_run_checks_the_registry_and_runs_no_node(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    code, out, err = run(capsys, workspace, "--dry-run")
    assert code == 0, err
    assert json.loads(out)["kept"] is None
    assert not (workspace / "calls.log").exists()


def test_a_property_read_in_parallel_for_is_refused_by_check(
    capsys: pytest.CaptureFixture[str], own_module: Path
) -> None:
    source = OWN_PROGRAM.replace("sep: Path.sep", "sep: parallel for t in [1] max 2 { Path.sep }")
    (own_module / "tools.as").write_text(source)
    code, out, err = cli(capsys, "check", str(own_module / "tools.as"))
    assert code != 0
    assert "effectful operation 'Path.sep' is not allowed inside parallel for" in out + err


@pytest.mark.parametrize(
    ("uri", "registry", "message"),
    [
        ("node:./lib/text.js", {"allow": {"node": ["path"]}},
         "'./lib/text.js' is not a Node built-in module"),
        ("node:path", {"allow": {"node": ["node:path"]}},
         "agentscript.npm.json.allow.node entries must omit the node: prefix"),
        ("node:path", {"allow": {"node": ["yaml"]}},
         "agentscript.npm.json.allow.node contains unknown Node built-in module 'yaml'"),
        ("npm:text", {"allow": {"npm": {"text": {"effectful": "no"}}}},
         "agentscript.npm.json.allow.npm.text.effectful must be boolean"),
        ("npm:text", {"allow": {"npm": {"text": {"exports": "sub"}}}},
         "agentscript.npm.json.allow.npm.text.exports must be a string array"),
        ("npm:text", {"allow": {"npm": ["text"]}},
         "agentscript.npm.json.allow.npm must be an object"),
        ("npm:text", {}, "Package 'text' is not allowed by agentscript.npm.json"),
    ],
)  # fmt: skip
def test_check_names_the_import_and_what_is_wrong_with_the_registry(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, uri: str, registry: object, message: str
) -> None:
    (tmp_path / "agentscript.npm.json").write_text(json.dumps(registry))
    program = tmp_path / "tools.as"
    program.write_text(
        f'import tool T from "{uri}"\n\nagent A {{\n    main func() {{\n        return T.go()\n'
        "    }\n}\n"
    )
    code, out, err = cli(capsys, "check", str(program))
    assert code != 0
    assert "tools.as:1:1: " in out + err and message in out + err


def test_agentscript_tools_says_which_imports_the_registry_refuses(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    (workspace / "agentscript.npm.json").write_text(json.dumps({"allow": {"node": ["path"]}}))
    code, out, err = cli(capsys, "tools", str(workspace / "tools.as"), "--dry")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:2] == ["Path  node:path", "Lib  npm:shouty"]
    assert "error: Package 'shouty' is not allowed by agentscript.npm.json" in lines[2]
