// tutorials/plan-execute/verifier.as: the Verifier agent, imported by main.as (not run alone).
// It judges one result against the step's own check.
// Syntax: 0.1.0 only.

import llm Careful from "openai://gpt-4.1"

agent Verifier {
    model Careful
    role "release reviewer"
    description "Checks one step result against the step's check and explains any failure."

    main func(request) {
        use request.step
        use request.result < 1k
        return generate({ input: "Does the result satisfy the step's check? If not, say why." }) {
            return {
                ok boolean
                reason string
            }
        }
    }
}
