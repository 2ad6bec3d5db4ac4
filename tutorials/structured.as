// tutorials/structured.as: structured output. The shape after `return` is both the JSON
// schema sent to the model and the contract its answer is checked against.
// Shows: every shape type (`string`, `number`, `boolean`, `json`, `list`, `list[string]`,
// `list[json]`), indexing and `.length` on the result, optional commas.
// Syntax: 0.1.0 only.
// Run offline with scripted answers:
//   agentscript run tutorials/structured.as --mock tutorials/structured.responses.json --input '{"text": "Pancakes for 4: 200 g flour, 2 eggs, 300 ml milk. Whisk, rest 10 minutes, fry."}'

import llm Model from "openai://gpt-4.1-mini"

main agent Extractor {
    model Model
    role "recipe parser"
    description "Turns free recipe text into structured data without inventing anything."

    main func(input { text string }) {
        use input.text < 2k
        recipe = generate({ input: "Extract the recipe." }) {
            return {
                title string
                servings number
                vegetarian boolean
                ingredients list[json]
                steps list[string]
                tags list
                source json
            }
        }
        return {
            title: recipe.title,
            servings: recipe.servings,
            vegetarian: recipe.vegetarian,
            ingredient_count: recipe.ingredients.length,
            first_ingredient: recipe.ingredients[0].name,
            first_step: recipe.steps[0],
            step_count: recipe.steps.length,
            tags: recipe.tags,
        }
    }
}
