// examples/react.as: a ReAct agent. Each round it thinks, then either searches or finishes with
// the answer; what it found goes into a scratch list that the next round reads back. At most 4
// rounds. The round that finishes carries the answer itself, so a question answered after two
// searches costs three model calls, not four; only a run that used up its rounds without
// finishing asks once more, from the notes alone.
// Search is the real `sh://grep`, run in-process over the small knowledge base in notes/
// (a substring search, line by line; `max: 5` keeps the first five matching lines).
// Shows: import tool (sh://grep), `loop until … < N`, a scratch list with .add / .summary /
// .length, `use` with budgets, a `use` inside the loop body that lives for one round only.
// Syntax: 0.1.0 only (`{ return { shape } }`, `<` budgets and bounds, explicit `return`).
// Run offline (scripted model answers; the searches are real, confined to examples/):
//   agentscript run examples/react.as --mock examples/react.responses.json --input '{"question": "Which Python release added the match statement?"}' --trace pretty

import llm Model from "openai://gpt-4.1-mini"
import tool Search from "sh://grep"

main agent Researcher {
    model Model
    role "research assistant"
    description "Answers questions by searching step by step and never guesses without evidence."

    main func(input { question string }) {
        use input.question
        notes = []
        done = false
        final = {}

        loop until done < 4 {
            // Visible to this round's generate only; the next round declares it again.
            use notes.summary < 3k
            step = generate({ input: "Say what is still missing, then either search, or finish with the answer and the queries you relied on." }) {
                return {
                    thought string
                    action string
                    query string
                    answer string
                    confident boolean
                    cited list[string]
                }
            }
            if step.action == "finish" {
                done = true
                final = step
            } else {
                found = Search.run({ path: "notes", pattern: step.query, max: 5 })
                notes.add({ query: step.query, thought: step.thought, found: found.matches })
            }
        }

        if not done {
            use notes.summary < 4k
            final = generate({ input: "Answer the question from the notes only. Cite the queries you relied on." }) {
                return {
                    answer string
                    confident boolean
                    cited list[string]
                }
            }
        }
        return {
            answer: final.answer
            confident: final.confident
            cited: final.cited
            searches: notes.length
        }
    }
}
