// examples/self-improve.as: an agent that learns from its own reviews. For each task it reads
// the lessons learned so far for this product, drafts, reviews its draft, and stores a new
// lesson when the review found one worth keeping. The second task is drafted with the first
// task's lesson, and so is every later run: the lessons are JSONL records in
// .agentscript/lessons.jsonl next to this program, and they outlive the run.
// The query filters on `kind` and on the product with `where` (a `text` filter would search
// the lesson's own words, which need not name the product); results come newest first.
// Shows: import memory (file JSONL), Lessons.query / Lessons.add, `use past < 2k`, generate
// with `attempts: 3` and `limit`, helper functions (each call starts with a fresh context).
// Syntax: 0.1.0 only.
// Run offline (scripted model answers; the memory is real: run it twice and the second run
// drafts with the first run's lesson and counts two lessons):
//   agentscript run examples/self-improve.as --mock examples/self-improve.responses.json --input '{"product": "Tally", "tasks": ["Announce dark mode", "Announce faster CSV export"]}' --trace pretty

import llm Model from "anthropic://claude-sonnet-4-5"
import memory Lessons from "file://./.agentscript/lessons.jsonl"

main agent Copywriter {
    model Model
    role "release copywriter"
    description "Writes short release announcements and improves from its own reviews."

    main func(input { product string  tasks list[string] }) {
        results = []
        for task in input.tasks < 3 {
            past = Lessons.query({ kind: "lesson", where: { product: input.product }, limit: 5 })
            blurb = draft(task, past)
            verdict = review(task, blurb.text)
            if verdict.keep {
                Lessons.add({ kind: "lesson", product: input.product, task: task, text: verdict.lesson })
            }
            results.add({ task: task, text: blurb.text, score: verdict.score })
        }
        return {
            results: results
            lessons: Lessons.query({ kind: "lesson", where: { product: input.product }, limit: 10 }).length
        }
    }

    func draft(task, past) {
        use past < 2k
        use task
        return generate({ input: "Write a two-sentence announcement. Follow every lesson above.", attempts: 3, limit: 400 }) {
            return {
                text string
            }
        }
    }

    func review(task, text) {
        use task
        use text < 1k
        return generate({ input: "Score the announcement from 1 to 5 and name one lesson for next time." }) {
            return {
                score number
                lesson string
                keep boolean
            }
        }
    }
}
