"""Who a tool call acts for: resolved once per request, from the URL path or the stdio command line."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Caller:
    """The namespace, the app name stamped on writes and the optional project scope of a connection."""

    user_id: str
    client_name: str
    project: str | None = None

    def project_or_scope(self, project: str | None) -> str | None:
        """A tool's explicit ``project`` argument wins over the connection's ``Project`` scope."""
        return project or self.project
