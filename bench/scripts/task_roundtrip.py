"""What Redis adds to a task round trip (BENCHMARKS.md, "A fleet"): a 2026-07-28 client starts
a task that waits on replica A, then times `tasks/get` of it through A (answered in process),
through B (B asks A over Redis), and through B after A is gone (B reads A's record).

    python3 bench/scripts/task_roundtrip.py A_HOST:PORT B_HOST:PORT PATH COUNT [A_PID]

PATH is the MCP endpoint with a query selecting a toolset with `task_wait` (fixture-context);
each timing is the median of COUNT requests over one kept-alive connection. With A_PID, A is
killed after the second series and the third is timed.
"""

import http.client
import json
import os
import signal
import statistics
import sys
import time

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    },
}


def request(connection, path, method, params, name):
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
        "mcp-name": name,
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                       "params": {**params, "_meta": META}})
    connection.request("POST", path, body, headers)
    response = connection.getresponse()
    answer = response.read().decode()
    if response.status != 200:
        sys.exit(f"{method}: HTTP {response.status}: {answer[:300]}")
    if answer.startswith("event:") or answer.startswith("data:") or "\ndata:" in answer:
        answer = next(l[5:] for l in answer.splitlines() if l.startswith("data:"))
    message = json.loads(answer)
    if "error" in message:
        sys.exit(f"{method}: {message['error']}")
    return message["result"]


def timed(address, path, task, count):
    host, port = address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port))
    took = []
    for _ in range(count):
        start = time.perf_counter()
        result = request(connection, path, "tasks/get", {"taskId": task}, task)
        took.append(time.perf_counter() - start)
    return statistics.median(took) * 1e6, result.get("status")


def main():
    a, b, path, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    pid = int(sys.argv[5]) if len(sys.argv) > 5 else None
    host, port = a.rsplit(":", 1)
    created = request(http.client.HTTPConnection(host, int(port)), path, "tools/call",
                      {"name": "task_wait", "arguments": {"ms": 600000}}, "task_wait")
    task = created["taskId"]
    for label, address in [("in process (A)", a), ("asked over Redis (B)", b)]:
        micros, status = timed(address, path, task, count)
        print(f"tasks/get {label}: median {micros:.0f} us ({status})")
    if pid:
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        micros, status = timed(b, path, task, count)
        print(f"tasks/get from the record, A gone (B): median {micros:.0f} us ({status})")


if __name__ == "__main__":
    main()
