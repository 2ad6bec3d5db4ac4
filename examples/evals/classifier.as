// examples/evals/classifier.as: a support-ticket classifier, the agent `agentscript eval` tests.
// One ticket in, one label out (billing, bug, account, feature or other) with a short reason.
// The `use one of` site "label guide" is the variant an eval compares: no guide, or one line
// per label (the selected default).
// Shows: an input contract, `use one of` with `empty` and `selected`, a shaped generate.
// Syntax: later forms (`use one of`, labels, `name: type` contracts, `->`, final expression).
// Evaluate it offline (scripted answers for the 20 cases; see docs/evals.md):
//   agentscript eval examples/evals/classifier.as --data examples/evals/cases.jsonl --mock examples/evals/answers.json --field label
// Run it once offline:
//   agentscript run examples/evals/classifier.as --mock examples/evals/classifier.responses.json --input '{"ticket": "I was charged twice for my March invoice."}'

import llm Model from "openai://gpt-4.1-mini"

main agent Triage {
    model Model
    role "support triage"
    description "Sorts customer tickets into one of five queues."

    main func(input {
        ticket: string
    }) {
        use input.ticket as "ticket"
        use one of {
            none: empty
            definitions: "billing: charges, invoices, refunds. bug: something broken or an error. account: login, password, profile, deletion. feature: a request for something new. other: anything else." selected
        } as "label guide"
        generate({ input: "Label the ticket: billing, bug, account, feature or other. Give a reason in a few words." }) -> {
            label: string
            reason: string
        }
    }
}
