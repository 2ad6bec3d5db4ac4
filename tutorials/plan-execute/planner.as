// tutorials/plan-execute/planner.as: the Planner agent, imported by main.as (not run alone).
// Its main func refines a draft plan; `revise` replaces one failed step.
// Syntax: 0.1.0 only.

import llm Careful from "openai://gpt-4.1"

agent Planner {
    model Careful
    role "release planner"
    description "Turns a goal and a draft into at most six concrete steps, each with a check."

    main func(request) {
        use request.goal
        use request.draft < 2k
        return generate({ input: "Refine the draft into concrete steps. Each step has id, task and check." }) {
            return {
                steps list[json]
            }
        }
    }

    func revise(request) {
        use request.goal
        use request.step
        use request.problem
        return generate({ input: "The step failed its check. Write one replacement step with id, task and check." }) {
            return {
                id string
                task string
                check string
            }
        }
    }
}
