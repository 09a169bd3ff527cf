"""Cortadel over the Model Context Protocol: four memory tools for any MCP client.

    mount_mcp(app, service, settings)      # Streamable HTTP at /mcp/{clientName}/{userId}
    run_stdio(settings, user_id="alice")   # the same tools over stdio (`cortadel mcp --user alice`)

The tools call the same ``MemoryService`` as the REST API; ``{clientName}`` becomes the app name
of every memory written through a connection, ``{userId}`` its namespace.
"""
