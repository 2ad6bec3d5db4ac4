"""`runs view`: a run's self-contained HTML page (timeline, generates, tools, task graph).

`steps` turns journal entries into timeline steps, `graph_layout` places the task graph,
`document` gathers the page's data and `page` writes it into the template (`page.html`,
`view.css`, `view.js`: resources of this package, inlined, so the page needs no network).
"""
