// examples/python/triage.as: the program behind the example service (service.py). It cleans the
// ticket with a Python function of the service's own package and labels it; triage_client/ is
// its typed client, made with:
//   agentscript generate python examples/python/triage.as -o examples/python/triage_client
// Shows: a Python tool (python:shop.tickets, allowed in pyproject.toml), closed choices in the
// output shape, a generate as the final expression (so the client's result type is known).
// Syntax: later forms (`name: type` contract, `-> { … }`, closed choices, final-expression return).
// Run offline with scripted answers:
//   agentscript run examples/python/triage.as --mock examples/python/triage.responses.json --input '{"text": "I was charged twice"}'

import llm Model from "openai://gpt-4.1-mini"
import tool Tickets from "python:shop.tickets"

main agent Triage {
    model Model
    role "support triage"
    description "Sorts a support ticket into billing, bug or other, and says whether it is urgent."

    main func(input { text: string }) {
        ticket = Tickets.normalize(input.text)
        use ticket as "ticket"
        generate({ input: "Label the ticket." }) -> {
            label: "billing" | "bug" | "other"
            urgent: boolean
        }
    }
}
