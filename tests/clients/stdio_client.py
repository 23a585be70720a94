"""The official MCP Python SDK's stdio client against `reactor-mcp-server stdio`.

Usage: stdio_client.py SERVER_BINARY PLUGIN_DIR

Starts the server as desktop clients do (`stdio --toolsets only=benchmarks`), lists its tools,
calls `add` and `echo`, and exits non-zero with a message if anything differs from what the
server must answer.
"""

import asyncio
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(server: str, plugin_dir: str) -> None:
    params = StdioServerParameters(
        command=server,
        args=["stdio", "--plugin-dir", plugin_dir, "--toolsets", "only=benchmarks"],
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "reactor-mcp-server", init.server_info
            tools = [tool.name for tool in (await session.list_tools()).tools]
            expected = ["echo", "add", "sleep", "blob", "list_server_toolsets"]
            assert tools == expected, f"tools: {tools}, expected {expected}"
            added = await session.call_tool("add", {"a": 2, "b": 3})
            assert not added.is_error and added.content[0].text == "5", added
            echoed = await session.call_tool("echo", {"text": "from python"})
            assert echoed.content[0].text == "from python", echoed
    print(f"python sdk stdio client: {len(tools)} tools listed, add and echo called")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
