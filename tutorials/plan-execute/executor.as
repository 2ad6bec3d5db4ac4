// tutorials/plan-execute/executor.as: the Executor agent, imported by main.as (not run alone).
// It sees the goal, the one step to do and a summary of earlier results, nothing else.
// Syntax: 0.1.0 only.

import llm Fast from "openai://gpt-4.1-mini"

agent Executor {
    model Fast
    role "release engineer"
    description "Carries out exactly one plan step and reports what was done."

    main func(request) {
        use request.goal
        use request.step
        use request.previous < 2k
        return generate({ input: "Do this step and report the outcome in one or two sentences." }) {
            return {
                output string
                done boolean
            }
        }
    }
}
