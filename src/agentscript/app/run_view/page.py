"""Write a run's page: the document as JSON inside the template, with the style and script
inlined, so the one file opens from `file://` with no network (a CSP forbids any fetch)."""

from __future__ import annotations

import html
import json
from functools import cache
from importlib import resources
from pathlib import Path

from agentscript.app.run_view.document import RunDocument, run_document
from agentscript.learn.journal import Journal
from agentscript.learn.journal_store import file_safe_run_id


def render_page(document: RunDocument) -> str:
    """The page's HTML for a gathered document."""
    template, style, script = _resources()
    data = json.dumps(document.data, ensure_ascii=False, default=str, separators=(",", ":"))
    # Inside <script> only `<` can end the element early: keep it out of the JSON text.
    data = data.replace("<", "\\u003c")
    title = html.escape(f"Run {document.data['run']['id']} · {document.data['run']['status']}")
    return (
        template.replace("__TITLE__", title)
        .replace("__STYLE__", style)
        .replace("__SCRIPT__", script)
        .replace("__DATA__", data)
    )


def write_run_pages(journal: Journal, reference: str, out: str | Path | None) -> list[Path]:
    """Write RUN's page to `out` (default `<journal folder>/views/<run id>.html`), and beside
    it the page of each run it called, so its links work; the paths written, RUN's first."""
    first = run_document(journal, reference)
    run_id = file_safe_run_id(first.data["run"]["id"])
    target = Path(out) if out is not None else _views_folder(journal) / f"{run_id}.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_page(first), encoding="utf-8")
    written = [target]
    for linked in first.linked_runs:
        page = target.parent / f"{file_safe_run_id(linked)}.html"
        page.write_text(render_page(run_document(journal, linked)), encoding="utf-8")
        written.append(page)
    return written


def _views_folder(journal: Journal) -> Path:
    return Path(str(journal.store.location)).parent / "views"


@cache
def _resources() -> tuple[str, str, str]:
    package = resources.files("agentscript.app.run_view")

    def read(name: str) -> str:
        return (package / name).read_text(encoding="utf-8")

    return read("page.html"), read("view.css"), read("view.js")
