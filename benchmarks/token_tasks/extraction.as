// Token benchmark, task 1: structured extraction from one email (one generate).
import llm Model from "openai://gpt-4.1-mini"

main agent Extractor {
    model Model
    role "email analyst"
    description "Extracts the facts of one email without inventing anything."

    main func(input { email string }) {
        use input.email as email
        generate({ input: "Extract the facts of this email." }) -> {
            sender string
            company string
            meeting_date string
            items list[string]
            urgent boolean
            reply_needed boolean
        }
    }
}
