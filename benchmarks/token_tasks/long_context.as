// Token benchmark, task 4: the tool loop with a 20 KB report that only the first step needs.
// The report is `use`d inside the first generate's block, so later steps never carry it.
import llm Model from "openai://gpt-4.1-mini"
import tool Search from "sh://grep"

main agent Auditor {
    model Model
    role "audit assistant"
    description "Finds the product codes a report flags and explains them from the notes."

    func codes_in(report) {
        use report as report
        generate({ input: "List the product codes this report flags as failing." }) -> {
            codes list[string]
        }
    }

    main func(input { question string, report string }) {
        flagged = codes_in(input.report)
        use input.question as question
        use flagged.codes as codes
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
