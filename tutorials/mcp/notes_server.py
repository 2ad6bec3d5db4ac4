"""A tiny MCP server for tutorials/mcp: the team handbook, a few notes kept in this file.

It speaks MCP over stdin and stdout (`python notes_server.py`), written with the MCP SDK's
server API. Two tools, both annotated read-only, so AgentScript runs them without asking:
`search` finds the notes that contain every word of a query, `get` answers one note's text.
"""

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

NOTES: dict[str, tuple[str, str]] = {
    "deploys": (
        "Deploying",
        "Merge to main, then run `make release`. No deploys on Fridays after 15:00.",
    ),
    "rollback": (
        "Rolling back a deploy",
        "Say in #ops that you are rolling back, then run `make rollback VERSION=<previous tag>`."
        " It takes about four minutes. Open an incident if customers noticed the bad deploy.",
    ),
    "incidents": (
        "Incidents",
        "The on-call engineer leads an incident until they hand over. Keep a timeline in the"
        " incident document; the review meeting is within five working days.",
    ),
    "on-call": (
        "On-call",
        "The rotation changes every Monday at 10:00. Swap shifts in #ops, never in private.",
    ),
}

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)

server = MCPServer("notes")


class Hit(BaseModel):
    id: str
    title: str


class Hits(BaseModel):
    hits: list[Hit]


def note_text(note_id: str) -> str:
    """A note as `get` answers it: its title as a heading, then its body."""
    title, body = NOTES[note_id]
    return f"# {title}\n\n{body}"


@server.tool(annotations=READ_ONLY)
def search(query: str, limit: int = 3) -> Hits:
    """The notes whose title or body contains every word of `query` (ignoring case)."""
    words = query.lower().split()
    found: list[Hit] = []
    for note_id, (title, body) in NOTES.items():
        text = f"{title} {body}".lower()
        if all(word in text for word in words):
            found.append(Hit(id=note_id, title=title))
    return Hits(hits=found[:limit])


@server.tool(annotations=READ_ONLY, structured_output=False)
def get(id: str) -> CallToolResult:
    """The text of the note `id`; an unknown id is a tool error naming the known ones."""
    if id not in NOTES:
        known = ", ".join(NOTES)
        return CallToolResult(
            content=[TextContent(text=f"No note {id!r}. Notes: {known}")], is_error=True
        )
    return CallToolResult(content=[TextContent(text=note_text(id))])


if __name__ == "__main__":
    server.run()
