// benchmarks/payoff/orders.as: a customer message, read in two steps: whether the customer is
// upset (for the reply's tone), then the order number it is about. Only the second step's
// instruction is a literal, so the optimizer changes that site alone and the first step's
// prompts repeat across trials: benchmarks/payoff.py measures the answer cache on them.
import llm Model from "openai://smollm2"
import tool Memory from "memory://workspace"

main agent Orders {
    model Model
    role "customer service assistant"
    description "Finds the order number a customer's message is about."

    main func(input { message: string }) {
        lessons = Memory.experiences({ task: "Find the order number in a message", limit: 3 })
        use lessons as "lessons from earlier runs"
        use input.message as "message"
        mood_question = "Is the customer upset?"
        mood = generate({ input: mood_question, max_output: 20, temperature: 0 }) -> {
            upset: boolean
        }
        use mood.upset as "customer upset"
        generate({ input: "Give the order number.", max_output: 40, temperature: 0 }) -> {
            order: string
        }
    }
}
