// examples/evals/judge.as: an LLM judge for the classifier's answers. `agentscript eval
// --metric examples/evals/judge.as` calls its main function with {input, expected, value} for
// every cell; it returns {score, reason}: 1 for the right label, 0.5 for a defensible one.
// Shows: an untyped input (any JSON), nested field access, a shaped generate as the verdict.
// Syntax: later forms (labels, `->`, final expression).
// Run it once offline:
//   agentscript run examples/evals/judge.as --mock examples/evals/judge.responses.json --input '{"input": {"ticket": "Is there an API for bulk imports?"}, "expected": "feature", "value": {"label": "bug", "reason": "something is broken"}}'

import llm Judge from "openai://gpt-4.1-mini"

main agent Grader {
    model Judge
    role "strict reviewer of ticket triage"
    description "Grades one triage answer against the expected label."

    // input: {input, expected, value}; the case's input and the classifier's value are objects.
    main func(input) {
        use input.input.ticket as "ticket"
        use input.expected as "expected label"
        use input.value as "answer"
        generate({ input: "Score the answer from 0 to 1: 1 if its label is the expected one, 0.5 if another label is defensible for this ticket, else 0. Say why in one sentence." }) -> {
            score: number
            reason: string
        }
    }
}
