// tutorials/mcp/mcp.as: answer a question from a team handbook served by a real MCP server.
// notes_server.py (next to this program) is a tiny MCP server written with the MCP SDK; the
// file agentscript.mcp.json starts it as a child process over stdio with the Python running
// AgentScript ("command": "${AGENTSCRIPT_PYTHON}", "args": ["notes_server.py"], run in the
// workspace, which is this directory). `mcp://notes` names the server "notes" of that file.
// A server tool can be called two ways: generically, `Notes.call({tool: "search", args: {…}})`,
// where the tool's name is data, or directly, `Notes.get({…})`, where the method is the tool.
// Either way the answer is `{ok, text, content, structured, isError}`: `text` joins the text
// the server sent, `structured` is its structured result (search sends `{hits: […]}`).
// agentscript.mcp.json rates both tools read-only ("tools": {"search": {"readOnlyHint": true}}),
// so the calls run without an approval; the gate never asks the server how risky its tools are.
// Starting the server is an action of its own: approvals.yml pins "notes" to its exact command,
// so it may start, and a changed command would not. Without a pin, starting it asks.
// See what starting the server would launch, without starting it:
//   agentscript tools tutorials/mcp/mcp.as --dry
// List what the server offers (this starts and stops it):
//   agentscript tools tutorials/mcp/mcp.as
// Shows: import tool (mcp://), both call forms, a tool result used as context, labels.
// Syntax: later forms (`name: type` contracts, `->`, labels, untyped fields).
// Run offline (scripted model answers; the MCP server is real):
//   agentscript run tutorials/mcp/mcp.as --mock tutorials/mcp/mcp.responses.json --approvals tutorials/mcp/approvals.yml --input '{"question": "How do I undo a bad deploy?", "topic": "deploy"}' --trace pretty

import llm Model from "openai://gpt-4.1-mini"
import tool Notes from "mcp://notes"

main agent Helpdesk {
    model Model
    role "team helpdesk"
    description "Answers questions about how the team works, from the team handbook only."

    main func(input {
        question: string
        topic: string
    }) {
        use input.question as question
        hits = Notes.call({ tool: "search", args: { query: input.topic, limit: 3 } })
        use hits.structured.hits as "handbook search results"
        pick = generate({ input: "Which note answers the question best? Give its id." }) -> {
            id
        }
        note = Notes.get({ id: pick.id })
        use note.text as "handbook note"
        generate({ input: "Answer the question from the handbook note only. Name the note you used." }) -> {
            answer
            source
        }
    }
}
