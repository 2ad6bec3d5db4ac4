// tutorials/context.as: what a prompt contains, and what it does not.
// Only `use` puts data into a prompt. A `use` is visible to generates in its block and in the
// blocks nested in it, never to called functions: each call starts with an empty context.
// Shows: labels (`as topic`, `as "recent notes"`), budgets that clip a list to the items
// that fit (`max 120`), a `use` inside an `if` block, a variable that is never used (so never
// sent), a scoped config override (`role` inside a function), generate options
// `max_output`, `temperature`, `think`, and a free-form generate without a shape (returns text).
// Syntax: later forms.
// Run offline with scripted answers:
//   agentscript run tutorials/context.as --mock tutorials/context.responses.json --input '{"topic": "Q3 onboarding revamp", "notes": ["Kickoff moved to Tuesday", "Design review found two accessibility gaps", "Budget approved for two contractors", "Beta feedback: the export is slow"]}' --trace pretty

import llm Model from "openai://gpt-4.1-mini"

main agent Briefing {
    model Model
    role "meeting assistant"
    description "Writes short, factual briefings from meeting notes."

    main func(input {
        topic: string
        notes: list[string]
    }) {
        use input.topic as topic
        use input.notes max 120 as "recent notes"
        secret = "This string is never used, so no prompt ever contains it."

        first = generate({ input: "Write a headline for the briefing.", max_output: 200, temperature: 0.2 }) -> {
            headline
        }
        headline = first.headline
        if headline.length > 60 {
            // Visible to the generate below (and to the two uses above), not after the block.
            use headline as draft
            shorter = generate({ input: "Shorten the draft headline to at most 60 characters.", think: "low" }) -> {
                headline
            }
            headline = shorter.headline
        }

        {
            headline: headline,
            briefing: write(input.topic, headline),
        }
    }

    func write(topic, headline) {
        // A fresh context: only these two uses reach the prompt.
        role "briefing writer"
        use topic as topic
        use headline as headline
        generate({ input: "Write a two-sentence briefing under the headline." })
    }
}
