// examples/deprecations.as: find the call sites of a deprecated function and plan the
// migration, guided by a migration note that lives next to this program.
// Grep is the real `sh://grep`, run in-process over the small code base in billing/ (the
// workspace is this program's directory, so `path` is relative to examples/).
// Shows: a `sh://grep` tool with structured arguments, `import file` (a Markdown note),
// string `+`, `use … max N as "label"`, generate options `max_output` and `strict`,
// `list[json]`, `if` without `else`, final-expression return.
// Syntax: later forms (`max`, labels, `name: type` contracts, `->`, `+`, final expression).
// Run offline (scripted model answers; the search is real):
//   agentscript run examples/deprecations.as --mock examples/deprecations.responses.json --input '{"symbol": "load_config", "path": "billing"}'

import llm Model from "openai://gpt-4.1"
import tool Grep from "sh://grep"
import file Guide from "./deprecations-guide.md"

main agent Migrator {
    model Model
    role "maintenance engineer"
    description "Plans small, safe refactors with one mechanical change per step."

    main func(input {
        symbol: string
        path: string
    }) {
        hits = Grep.run({ path: input.path, pattern: input.symbol + "(", include: "*.py", max: 50 })
        use Guide max 2k as "migration note"
        use hits max 4k as "call sites"
        plan = generate({ input: "List each call site to change and how to change it.", max_output: 2k, strict: true }) -> {
            changes: list[json]
            risky: boolean
            summary
        }
        verdict = "mechanical"
        if plan.risky {
            verdict = "needs review"
        }
        {
            symbol: input.symbol,
            changes: plan.changes.length,
            verdict: verdict,
            summary: plan.summary,
        }
    }
}
