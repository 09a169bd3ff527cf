"""The web dashboard: see and curate what the agents remember, in the browser.

Server-rendered pages (Jinja2 templates, autoescaped) served by the same process, port and auth as
the API, with a stylesheet and a few lines of script shipped in the package: no build step, no
CDN, no request that leaves the machine. Plain forms do all the work, so every page also works
without script. Every read and every change goes through the ``MemoryService`` REST and MCP use.
"""

from cortadel_server.dashboard import entity_merge
from cortadel_server.dashboard.pages import router

router.include_router(entity_merge.router)

__all__ = ["router"]
