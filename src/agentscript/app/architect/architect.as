// The program behind `agentscript architect "REQUEST" OUT.as`: a model designs an AgentSpec from
// a plain-language request, host://architect validates it, the model repairs it from the
// diagnostics (twice at most), and the spec is compiled and the program checked. The command
// writes `source` only when `analysis_ok` is true.

import llm Model from "ollama://localhost:11434/qwen3.6"
import tool Architect from "host://architect"

main agent AgentScriptArchitect {
    model Model
    role "AgentScript architect"
    description "Turns a plain-language requirement into an AgentSpec, then into a checked program."

    main func(input {
        request: string
        target_name: string
        model_uri: string
    }) {
        use input.request as "what the user wants the agent to do"
        use input.target_name as "the agent's name"
        use input.model_uri as "the model the agent should use"

        draft = generate({
            input: "Design the smallest agent that does what the user wants, as one AgentSpec JSON object in `spec`. Keys: version \"0.1\"; pattern \"linear\" (tool calls once, then one answer: search, retrieve, classify, summarise, extract, rewrite) or \"react\" (only for a loop that reasons, acts with a tool, observes, and decides again); agent {name, role, description}, with the given agent name when it is an UpperCamelCase identifier; model {import_name: \"Model\", uri: the given model uri}; inputs, an object such as {question: {type: \"string\"}}; tools, an array of {import_name, uri, methods: [{name, purpose}]}, empty when the input alone is enough (for an integration nobody named, a placeholder such as mcp://docs, noted in assumptions); locals, an array of {name, source: {kind: \"tool_call\", tool, method, args}} whose args are strings \"input.FIELD\", \"local.NAME\" or literal text; model_context, a non-empty array of {source: \"input.FIELD\" or \"local.NAME\", label, max?: a string such as \"8k\"}; generation {input: an instruction in words, max_output?: an integer}; output {fields: {NAME: {type}}}; assumptions, an array of strings. A react spec also has react {max_iterations, scratch {label, max}, reason {input, max_output?, output {fields}}, act {tool, method, args, where \"thought.FIELD\" is the reasoning's field}, stop_when: \"thought.FIELD\" naming a boolean field}. Types are only string, number, boolean, json and list[string], list[number], list[boolean], list[json]. List what is still unclear in missing_requirements, and design a reasonable spec anyway.",
            max_output: 9000
        }) -> {
            spec: json
            assumptions: list[string]
            missing_requirements: list[string]
        }

        spec = draft.spec
        validation = Architect.validateSpec({ spec: spec })
        repair_summary = "no repair needed"
        compiled = Architect.compileSpec({ spec: spec })
        repairs = 0

        loop until compiled.ok max 2 {
            use spec as "the AgentSpec so far"
            use compiled.diagnostics as "what is wrong with it, each at its JSON pointer"
            repair = generate({
                input: "Fix every diagnostic of this AgentSpec and return the whole corrected spec in `spec`. Keep the user's design; change only what the diagnostics name (a missing field, a wrong kind, an unknown reference, a name that collides). References are \"input.FIELD\", \"local.NAME\" or, inside a react act, \"thought.FIELD\"; budgets are strings such as \"8k\"; max_output is an integer.",
                max_output: 9000
            }) -> {
                spec: json
                repair_summary: string
            }
            spec = repair.spec
            repair_summary = repair.repair_summary
            repairs += 1
            compiled = Architect.compileSpec({ spec: spec })
        }

        source = ""
        analysis = { ok: false, diagnostics: [] }
        if compiled.ok {
            source = compiled.source
            analysis = Architect.analyzeSource({ source: source })
        } else {
            analysis = { ok: false, diagnostics: compiled.diagnostics }
        }

        return {
            source: source,
            spec: spec,
            validation_ok: validation.ok,
            compile_ok: compiled.ok,
            analysis_ok: analysis.ok,
            diagnostics: analysis.diagnostics,
            repairs: repairs,
            assumptions: draft.assumptions,
            missing_requirements: draft.missing_requirements,
            repair_summary: repair_summary
        }
    }
}
