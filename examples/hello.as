// examples/hello.as: the smallest useful agent. One input, one `use`, one `generate`.
// Shows: an agent with model/role/description, an input contract, a labelled `use`, an output
// shape with an untyped field (a string), and a function that returns its final expression.
// Syntax: later forms (`name: type` contract, `-> { … }`, `as "label"`, final-expression return).
// Run offline with scripted answers:
//   agentscript run examples/hello.as --mock examples/hello.responses.json --input '{"name": "Ada"}'

import llm Model from "openai://gpt-4.1-mini"

main agent Greeter {
    model Model
    role "friendly greeter"
    description "Writes one short, warm greeting for a person."

    main func(input {
        name: string
    }) {
        use input.name as "person"
        generate({ input: "Greet this person in one sentence." }) -> {
            greeting
        }
    }
}
