"""Posts one MCP request many times over one kept-alive connection, with or without a bearer
credential, for measuring what authentication costs per request under callgrind
(BENCHMARKS.md, "Who may call").

    python3 bench/scripts/auth_requests.py HOST:PORT PATH COUNT [TOKEN]

PATH is the MCP endpoint with its query (`/mcp?only=benchmarks`); the server runs --stateless
(JSON answers). Each request is `tools/call echo {"text": "hi"}`; every answer must be 200.
"""

import http.client
import json
import sys


def main() -> None:
    address, path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    token = sys.argv[4] if len(sys.argv) > 4 else None
    host, port = address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port))
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
    }
    if token:
        headers["authorization"] = f"Bearer {token}"
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "echo", "arguments": {"text": "hi"}}}
    )
    for _ in range(count):
        connection.request("POST", path, body, headers)
        response = connection.getresponse()
        answer = response.read()
        if response.status != 200:
            sys.exit(f"{response.status}: {answer[:300]!r}")


if __name__ == "__main__":
    main()
