#!/usr/bin/env python3
"""A tiny stdio MCP server for the bridge's tests: one `echo` tool, and misbehaviour on demand.

TINY_MODE selects: `ok` (default); `crash` (exits on its first tools/call); `crash-once` (exits
on its first tools/call unless the file TINY_MARKER exists, which it then creates); `slow-start` (sleeps
TINY_DELAY seconds before answering initialize); `hang` (never answers tools/call); `garbage`
(prints a line that is not JSON before each answer); `fail` (writes to stderr and exits at once);
`fail-once` (as `fail` unless the file TINY_MARKER exists, which it then creates).
`echo` with `"env": true` answers the names of its environment variables, as a JSON list;
with `"meta": true`, the `_meta` of the request, as JSON text; with `"fail": true`, a JSON-RPC
error (the server's own failure, not the tool's).
`echo` with `"log": true` sends its text as a log message (`notifications/message`) first; with
`"change": true` it adds the tool `added` and sends `notifications/tools/list_changed`.
With TINY_DESCRIPTION_FILE set, `echo`'s description is that file's text, read at each
tools/list (a server that changes a tool's definition, for the pins' tests).
With TINY_SKILLS set, it declares the Skills extension (`io.modelcontextprotocol/skills`,
SEP-2640) and resources, and serves one skill, `git-workflow` (its `SKILL.md` and
`references/style.md` under `skill://git-workflow/`), by `skills/list`, `skills/get` and
`resources/read`.
"""
import hashlib
import json
import os
import sys
import time

MODE = os.environ.get("TINY_MODE", "ok")
DELAY = float(os.environ.get("TINY_DELAY", "2"))


def echo_description():
    path = os.environ.get("TINY_DESCRIPTION_FILE")
    if path is None:
        return "Echoes its text."
    with open(path) as f:
        return f.read().strip()


SKILLS = "TINY_SKILLS" in os.environ
SKILL_URI = "skill://git-workflow/SKILL.md"
SKILL_FILES = {
    SKILL_URI: "---\nname: git-workflow\ndescription: Commit and branch the team's way\n---\n"
               "# Git workflow\n\nOne change per commit; see references/style.md.\n",
    "skill://git-workflow/references/style.md": "Subjects in the imperative, under 72 characters.\n",
}


def skill():
    files = [{"uri": uri, "digest": "sha256:" + hashlib.sha256(text.encode()).hexdigest(),
              "size": len(text.encode())} for uri, text in SKILL_FILES.items()]
    return {"uri": SKILL_URI,
            "frontmatter": {"name": "git-workflow", "description": "Commit and branch the team's way"},
            "resources": files}


def skills_answer(method, params):
    """The answer to a Skills request (a result, or an error), or None for another method."""
    if method == "skills/list":
        return {"result": {"skills": [skill()]}}
    if method == "skills/get":
        if params.get("uri") != SKILL_URI:
            return {"error": {"code": -32602, "message": "no skill " + str(params.get("uri"))}}
        return {"result": {"skill": skill()}}
    if method == "resources/list":
        return {"result": {"resources": []}}
    if method == "resources/templates/list":
        return {"result": {"resourceTemplates": []}}
    if method == "resources/read":
        uri = params.get("uri")
        if uri not in SKILL_FILES:
            return {"error": {"code": -32002, "message": "Resource not found", "data": {"uri": uri}}}
        return {"result": {"contents": [{"uri": uri, "mimeType": "text/markdown",
                                         "text": SKILL_FILES[uri]}]}}
    return None


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    changed = False
    if MODE == "fail-once" and not os.path.exists(os.environ["TINY_MARKER"]):
        open(os.environ["TINY_MARKER"], "w").close()
        sys.exit(3)
    if MODE == "fail":
        sys.stderr.write("tiny: cannot open the database\n")
        sys.exit(3)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        method, rid = request.get("method"), request.get("id")
        if rid is None:
            continue
        if MODE == "garbage":
            sys.stdout.write("this is not JSON\n")
        if method == "initialize":
            if MODE == "slow-start":
                time.sleep(DELAY)
            capabilities = {"tools": {}}
            if SKILLS:
                capabilities["resources"] = {}
                capabilities["extensions"] = {"io.modelcontextprotocol/skills": {}}
            result = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": capabilities,
                "serverInfo": {"name": "tiny", "version": "1"},
            }
        elif method == "tools/list":
            cursor = (request.get("params") or {}).get("cursor")
            if cursor is None:
                result = {
                    "tools": [{"name": "echo", "description": echo_description(),
                               "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}],
                    "nextCursor": "page2",
                }
            else:
                result = {"tools": [{"name": "pid.of", "inputSchema": {"type": "object"}}]}
                if changed:
                    result["tools"].append({"name": "added", "inputSchema": {"type": "object"}})
        elif method == "tools/call":
            name = request["params"]["name"]
            arguments = request["params"].get("arguments") or {}
            if MODE == "crash":
                sys.exit(1)
            if MODE == "crash-once" and not os.path.exists(os.environ["TINY_MARKER"]):
                open(os.environ["TINY_MARKER"], "w").close()
                sys.exit(1)
            if MODE == "hang":
                continue
            if name == "echo" and arguments.get("fail"):
                send({"jsonrpc": "2.0", "id": rid,
                      "error": {"code": -32603, "message": "tiny: the database is down"}})
                continue
            if name == "echo" and arguments.get("log"):
                send({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "logger": "tiny", "data": arguments.get("text", "")}})
            if name == "echo" and arguments.get("change"):
                changed = True
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            if name == "echo" and arguments.get("meta"):
                meta = request["params"].get("_meta") or {}
                result = {"content": [{"type": "text", "text": json.dumps(meta)}]}
            elif name == "echo" and arguments.get("env"):
                names = sorted(os.environ)
                result = {"content": [{"type": "text", "text": json.dumps(names)}]}
            elif name == "echo":
                result = {"content": [{"type": "text", "text": arguments.get("text", "")}],
                          "structuredContent": {"text": arguments.get("text", "")},
                          "_meta": {"tiny": True}}
            else:
                result = {"content": [{"type": "text", "text": str(os.getpid())}], "isError": False}
        elif method == "ping":
            result = {}
        elif SKILLS and skills_answer(method, request.get("params") or {}) is not None:
            send({"jsonrpc": "2.0", "id": rid, **skills_answer(method, request.get("params") or {})})
            continue
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no " + method}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})


main()
