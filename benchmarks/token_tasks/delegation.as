// Token benchmark, task 3: a coordinator delegates one topic each to three worker calls, then
// summarises what they found.
import llm Model from "openai://gpt-4.1-mini"

agent Worker {
    model Model
    role "reviewer"
    description "Reviews one engineering topic and states its finding in one sentence."

    main func(request) {
        use request.topic as topic
        use request.system as system
        generate({ input: "Give your finding on this topic for this system." }) -> {
            finding string
        }
    }
}

main agent Coordinator {
    model Model
    role "tech lead"
    description "Splits a review into topics and summarises the findings."

    main func(input { system string, topics list[string] }) {
        findings = []
        for topic in input.topics < 3 {
            result = Worker({ topic: topic, system: input.system })
            findings.add({ topic: topic, finding: result.finding })
        }
        use findings as findings
        generate({ input: "Summarise the findings in two sentences." }) -> {
            summary string
        }
    }
}
