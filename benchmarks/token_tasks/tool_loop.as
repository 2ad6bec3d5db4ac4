// Token benchmark, task 2: search the notes at most three times, then answer with citations.
// The step that finishes carries the answer, so there is no separate answering round.
import llm Model from "openai://gpt-4.1-mini"
import tool Search from "sh://grep"

main agent Researcher {
    model Model
    role "research assistant"
    description "Answers from the notes only and cites the files it used."

    main func(input { question string }) {
        use input.question as question
        found = []
        answer = {}
        done = false
        loop until done < 3 {
            use found < 3k as search results
            step = generate({ input: "Search the notes, or finish with the answer and the files cited." }) -> {
                action string
                query string
                answer string
                cited list[string]
            }
            if step.action == "finish" {
                done = true
                answer = { answer: step.answer, cited: step.cited }
            } else {
                result = Search.run({ path: "notes", pattern: step.query, max: 5 })
                for match in result.matches < 5 {
                    found.add(match)
                }
            }
        }
        return answer
    }
}
