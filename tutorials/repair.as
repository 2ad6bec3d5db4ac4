// tutorials/repair.as: what happens when the model answers badly. With `attempts: 3` a bad
// answer is not fatal: the runtime asks again, appending a repair message (the error and, when
// there was one, the previous output) to the original instruction.
// The scripted answers go wrong on purpose:
//   1. prose instead of JSON       -> "LLM provider did not return JSON", repaired;
//   2. JSON with a wrong type      -> "LLM result field must be a number", repaired;
//   3. JSON inside a ```json fence -> extracted; "4" and "TRUE" are coerced to 4 and true.
// The trace's generate event records `attempts: 3` and the two errors.
// Syntax: 0.1.0 only.
// Run offline with scripted answers:
//   agentscript run tutorials/repair.as --mock tutorials/repair.responses.json --input '{"task": "Add CSV export to the reports page"}' --trace pretty

import llm Model from "ollama://localhost:11434/llama3.2"

main agent Estimator {
    model Model
    role "project estimator"
    description "Estimates effort in whole days and states its assumptions."

    main func(input { task string }) {
        use input.task
        estimate = generate({ input: "Estimate the effort for the task.", attempts: 3 }) {
            return {
                days number
                assumptions list[string]
                confident boolean
            }
        }
        return estimate
    }
}
