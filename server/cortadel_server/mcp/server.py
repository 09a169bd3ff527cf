"""The MCP server: tools only, one instance for every connection.

Who a call acts for is not fixed at construction: ``caller_of`` resolves it per request (from the
URL path over HTTP, from the command line over stdio). Every failure comes back as a tool error the
model can read; nothing a tool raises ends the session.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)
from pydantic import ValidationError

from cortadel_server import __version__
from cortadel_server.errors import CortadelError, RequestError, ValidationFailed
from cortadel_server.mcp.arguments import Arguments
from cortadel_server.mcp.caller import Caller
from cortadel_server.mcp.tools import TOOLS
from cortadel_server.service import MemoryService

log = logging.getLogger("cortadel.mcp")

CallerOf = Callable[[ServerRequestContext[Any, Any]], Caller]

INSTRUCTIONS = (
    "Cortadel is the user's long-term memory. Search it (search_memory) before answering questions that may "
    "depend on what the user told you earlier; store what is worth keeping (add_memories, or add_conversation "
    "for a whole exchange); look up how a task was done before with get_skill."
)


def build_server(service: MemoryService, caller_of: CallerOf) -> Server[Any]:
    tools = [spec.descriptor() for spec in TOOLS.values()]

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
        started = time.perf_counter()
        result = await call(service, caller_of(ctx), params.name, params.arguments or {})
        tool = params.name if params.name in TOOLS else "unknown"  # a bounded set of metric labels
        service.metrics.observe_request(f"mcp:{tool}", "error" if result.is_error else "ok", time.perf_counter() - started)
        return result

    return Server(
        "cortadel",
        version=__version__,
        title="Cortadel memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def call(service: MemoryService, caller: Caller, name: str, arguments: dict[str, Any]) -> CallToolResult:
    spec = TOOLS.get(name)
    if spec is None:
        return tool_error(f"Unknown tool {name!r}; the tools are {', '.join(TOOLS)}.")
    try:
        args = spec.arguments.model_validate(_decode_json_lists(spec.arguments, arguments))
        run = partial(spec.run, service, caller, args)
        # The same worker pools as REST: a tool call that writes never holds a thread a search needs.
        result = await (service.workers.read(run) if spec.read_only else service.workers.write(run))
    except ValidationError as exc:
        return tool_error(f"Invalid arguments for {name}: {_describe(exc)}")
    except ValidationFailed as exc:
        reasons = "; ".join(f"{field}: {', '.join(msgs)}" for field, msgs in exc.errors.items())
        return tool_error(f"Invalid arguments for {name}: {reasons}")
    except RequestError as exc:
        return tool_error(exc.message)
    except CortadelError as exc:
        log.error("MCP %s for user %r failed: %s", name, caller.user_id, exc)
        return tool_error(f"{name} could not be completed: {exc}")
    except Exception:
        log.exception("MCP %s for user %r raised", name, caller.user_id)
        return tool_error(f"{name} failed with an internal error; the server log has the details.")
    return CallToolResult(content=[TextContent(type="text", text=result.text)], structured_content=result.data)


def tool_error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _describe(exc: ValidationError) -> str:
    """One clause per problem, each naming the argument: "topK: Input should be less than or equal to 50"."""
    reasons = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(part) for part in err["loc"]) or "arguments"
        message = "unknown argument" if err["type"] == "extra_forbidden" else err["msg"]
        reasons.append(f"{where}: {message}")
    return "; ".join(reasons)


def _decode_json_lists(model: type[Arguments], arguments: dict[str, Any]) -> dict[str, Any]:
    """Some clients send array arguments as JSON text (``"[\\"a\\", \\"b\\"]"``); decode those."""
    properties = model.input_schema().get("properties", {})
    decoded = dict(arguments)
    for key, value in arguments.items():
        if isinstance(value, str) and value.lstrip().startswith("[") and _is_array(properties.get(key, {})):
            try:
                decoded[key] = json.loads(value)
            except ValueError:
                pass  # left as is: validation names the argument
    return decoded


def _is_array(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "array" or any(option.get("type") == "array" for option in schema.get("anyOf", []))
