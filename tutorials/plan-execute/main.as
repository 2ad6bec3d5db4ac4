// tutorials/plan-execute/main.as: plan-and-execute with three ordinary agents in three files.
// The Planner turns a draft plan (a JSON file) into concrete steps, the Executor carries out
// one step at a time, the Verifier checks each result; a failed step gets a replacement step
// from the Planner, which is executed at once.
// Shows: `import agent` across files, `import file` of JSON, `for step in plan.steps < 6`,
// indexing (`plan.steps[0]`), `.length`, `.summary`, agent calls `Agent(x)` and `Agent.fn(x)`,
// a main agent without a model (it never generates itself).
// Syntax: 0.1.0 only, in all four .as files.
// Run offline (scripted answers keyed by agent and function):
//   agentscript run tutorials/plan-execute/main.as --mock tutorials/plan-execute/main.responses.json --input '{"goal": "Release version 2.4 of the docs site"}' --trace pretty

import agent Planner from "./planner.as"
import agent Executor from "./executor.as"
import agent Verifier from "./verifier.as"
import file Draft from "./draft-plan.json"

main agent Release {
    main func(input { goal string }) {
        plan = Planner({ goal: input.goal, draft: Draft })
        first = plan.steps[0]
        results = []
        problems = []

        for step in plan.steps < 6 {
            result = Executor({ goal: input.goal, step: step, previous: results.summary })
            verdict = Verifier({ step: step, result: result })
            if verdict.ok {
                results.add({ id: step.id, output: result.output })
            } else {
                problems.add({ id: step.id, reason: verdict.reason })
                fix = Planner.revise({ goal: input.goal, step: step, problem: verdict.reason })
                retry = Executor({ goal: input.goal, step: fix, previous: results.summary })
                results.add({ id: fix.id, output: retry.output })
            }
        }

        return {
            goal: input.goal
            started_with: first.task
            planned: plan.steps.length
            completed: results.length
            problems: problems
            results: results
        }
    }
}
