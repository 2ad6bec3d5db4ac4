// examples/learning/report.as: a task an agent gets wrong at first and right once it has learned
// from its own runs. The task names a monthly sales report; the agent must find the file (the
// reports are under reports/<year>/, not where a first guess puts them) and give its total as a
// number. The lessons distilled from earlier runs come back from the long-term memory through
// Memory.experiences and go into both prompts. benchmarks/learning.py runs 20 such tasks with a
// model that makes both mistakes until a lesson in its prompt says otherwise.
// Shows: import tool memory://workspace, Memory.experiences, sh://find, File.read, `if`, helper
// functions (each call starts with a fresh context, so each uses the lessons itself).
// Syntax: later forms (`name: type` contract, `-> { … }`, `as "label"`, final-expression return).
// Run offline (scripted answers that already follow both lessons):
//   agentscript run examples/learning/report.as --mock examples/learning/report.responses.json --input '{"task": "Summarise the March 2026 sales report"}'

import llm Model from "openai://gpt-4.1-mini"
import tool File from "file://workspace"
import tool Find from "sh://find"
import tool Memory from "memory://workspace"

main agent Analyst {
    model Model
    role "sales report analyst"
    description "Finds the sales report a task names and states its total."

    main func(input {
        task: string
    }) {
        lessons = Memory.experiences({ task: input.task, limit: 5 })
        path = locate(input.task, lessons)
        report = File.read({ path: path })
        summarise(input.task, report, lessons)
    }

    func locate(task, lessons) {
        use lessons as "lessons from earlier runs"
        use task as "task"
        plan = generate({ input: "Which report file does the task need? Give its file name, and say whether to look it up in the workspace first." }) -> {
            file: string
            look_up: boolean
        }
        if plan.look_up {
            found = Find.run({ path: ".", name: "*" + plan.file, type: "file", max: 1 })
            if found.files.length > 0 {
                return found.files[0]
            }
        }
        return plan.file
    }

    func summarise(task, report, lessons) {
        use lessons as "lessons from earlier runs"
        use task as "task"
        use report < 2k as "report"
        generate({ input: "Summarise the report in one sentence and give its total amount." }) -> {
            summary: string
            total: number
        }
    }
}
