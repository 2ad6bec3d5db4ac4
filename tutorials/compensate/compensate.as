// tutorials/compensate/compensate.as: write a file, check it, and take the write back when the
// check fails. The program drafts a changelog entry and a blog announcement for a release,
// writes each with `File.write`, and has a reviewer (a generate acting as verifier) check
// what was written against the list of changes. A rejected file is compensated at once by an
// ordinary function, `compensate(result)`, which calls `File.undo(result.effects)`.
// With the scripted answers the changelog passes and is kept; the announcement invents a
// feature, fails, and is removed again, so only CHANGELOG.md is left changed.
//
// Effect records: every write or patch answers `{ok, effects: [record]}`; a record says what
// changed and how to put it back (`id`, `action`, `path`, `existed`, the `previous` content,
// `after_sha256`, `workspace`). `File.undo(effects)` reverts newest first and reports a
// conflict instead of overwriting a file that changed since. The trace keeps every record.
// Approvals: reads run, but writes and undo ask first, and with no terminal to ask a run
// refuses them; pass `--approve auto` to approve them all (the workspace is this directory).
// Undo later, from the command line: save the trace with `--trace run.json`, then (undo acts
// only in the workspace it is given, the current directory by default)
//   agentscript undo run.json --workspace tutorials/compensate --dry-run   (what would be put back)
//   agentscript undo run.json --workspace tutorials/compensate             (put CHANGELOG.md back)
// Shows: file://workspace read / write / undo, effect records, compensation in a function,
// a scoped `role` override, labels, string `+`, final-expression return.
// Syntax: later forms (`->`, `+`, labels, `name: type` contracts, final expression).
// Run offline (scripted model answers; the file tools are real):
//   agentscript run tutorials/compensate/compensate.as --mock tutorials/compensate/compensate.responses.json --approve auto --trace run.json --input '{"version": "2.4", "changes": ["CSV export is up to five times faster", "The date picker remembers the last month you chose"]}'

import llm Model from "openai://gpt-4.1-mini"
import tool File from "file://workspace"

main agent Publisher {
    model Model
    role "release writer"
    description "Writes release texts that mention only the changes it was given."

    main func(input {
        version: string
        changes: list[string]
    }) {
        old = File.read({ path: "CHANGELOG.md" })
        entry = draft(input, "A CHANGELOG.md entry: a '## <version>' heading, then one '- ' line per change.")
        changelog = publish("CHANGELOG.md", entry.text + old, input.changes)
        post = draft(input, "A blog announcement of at most three sentences.")
        announcement = publish("announcement.md", post.text, input.changes)
        { changelog: changelog, announcement: announcement }
    }

    func draft(input, what) {
        use input.version as version
        use input.changes as changes
        generate({ input: what + " Mention only the listed changes." }) -> { text }
    }

    // Write, then check what was written; a rejected write is compensated at once.
    func publish(path, content, changes) {
        result = File.write({ path: path, content: content })
        check = verify(content, changes)
        if check.ok {
            return { path: path, kept: true, problem: "", undone: 0 }
        }
        undo = compensate(result)
        { path: path, kept: false, problem: check.problem, undone: undo.undone.length }
    }

    func verify(text, changes) {
        role "release reviewer"
        use changes as "the only changes in this release"
        use text as "text to check"
        generate({ input: "Does the text claim anything that is not in the list of changes? ok is true when it does not." }) -> {
            ok: boolean
            problem
        }
    }

    // The compensation: put back every file the write changed, newest first.
    func compensate(result) {
        File.undo(result.effects)
    }
}
