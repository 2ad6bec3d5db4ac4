// benchmarks/payoff/triage.as: sorts a support ticket into billing, bug or other. The payoff
// benchmark (benchmarks/payoff.py) optimizes its instruction and worked examples on the local
// model, and runs it with learning on: the lessons come back through Memory.experiences.
import llm Model from "openai://smollm2"
import tool Memory from "memory://workspace"

main agent Triage {
    model Model
    role "support triage"
    description "Sorts support tickets into billing, bug or other."

    main func(input { ticket: string }) {
        lessons = Memory.experiences({ task: "Label a support ticket", limit: 3 })
        use lessons as "lessons from earlier runs"
        use input.ticket as "ticket"
        generate({ input: "Label the ticket.", max_output: 40, temperature: 0 }) -> {
            label: "billing" | "bug" | "other"
        }
    }
}
