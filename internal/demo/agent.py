#!/usr/bin/env python3
"""A stdlib-only agent for the OpenAI chat completions API.

It reads OPENAI_BASE_URL (default https://api.openai.com/v1), OPENAI_API_KEY
and AGENT_MODEL, makes a plain and a streamed call, then runs a tool-calling
loop that alternates plain and streamed calls and writes files in its working
directory as the model asks. It exits non-zero on any error.
"""

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

BASE_URL = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/")
API_KEY = os.environ.get("OPENAI_API_KEY", "")
MODEL = os.environ.get("AGENT_MODEL", "demo-large")
TASK = "Write a short poem about a jukebox to poem.txt, read it back, then count its lines."

TOOLS = [
    {"type": "function", "function": {
        "name": "write_file", "description": "Write a text file in the working directory.",
        "parameters": {"type": "object", "required": ["path", "content"],
                       "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}},
    {"type": "function", "function": {
        "name": "read_file", "description": "Read a text file from the working directory.",
        "parameters": {"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}}},
    {"type": "function", "function": {
        "name": "run_shell", "description": "Run a shell command in the working directory.",
        "parameters": {"type": "object", "required": ["command"], "properties": {"command": {"type": "string"}}}}},
]


def post(body):
    """POST body to chat/completions and return the open response."""
    req = urllib.request.Request(
        BASE_URL + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + API_KEY},
        method="POST",
    )
    try:
        return urllib.request.urlopen(req, timeout=60)
    except urllib.error.HTTPError as err:
        raise RuntimeError(f"HTTP {err.code}: {err.read().decode(errors='replace')}") from None


def complete(messages, tools=None):
    """A non-streamed call; returns the assistant message."""
    body = {"model": MODEL, "messages": messages}
    if tools:
        body["tools"] = tools
    with post(body) as resp:
        return json.load(resp)["choices"][0]["message"]


def sse_data(resp):
    """Yield the data of each server-sent event until [DONE]."""
    for raw in resp:
        line = raw.decode().rstrip("\r\n")
        if not line.startswith("data: "):
            continue
        data = line[len("data: "):]
        if data == "[DONE]":
            return
        yield json.loads(data)
    raise RuntimeError("stream ended without [DONE]")


def complete_stream(messages, tools=None):
    """A streamed call; assembles content and tool-call deltas into a message."""
    body = {"model": MODEL, "messages": messages, "stream": True, "stream_options": {"include_usage": True}}
    if tools:
        body["tools"] = tools
    content, calls, usage = "", [], None
    with post(body) as resp:
        for chunk in sse_data(resp):
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices", []):
                delta = choice.get("delta", {})
                content += delta.get("content") or ""
                for tc in delta.get("tool_calls") or []:
                    if tc["index"] == len(calls):
                        calls.append({"id": tc["id"], "type": "function",
                                      "function": {"name": tc["function"]["name"], "arguments": ""}})
                    calls[tc["index"]]["function"]["arguments"] += tc["function"].get("arguments", "")
    if not usage or usage["total_tokens"] != usage["prompt_tokens"] + usage["completion_tokens"]:
        raise RuntimeError(f"stream usage missing or inconsistent: {usage}")
    msg = {"role": "assistant", "content": content or None}
    if calls:
        msg["tool_calls"] = calls
    return msg


def inside(path):
    """Resolve path inside the working directory, refusing escapes."""
    cwd = os.getcwd()
    full = os.path.realpath(os.path.join(cwd, path))
    if full != cwd and not full.startswith(cwd + os.sep):
        raise RuntimeError(f"path {path} escapes the working directory")
    return full


def run_tool(name, args):
    if name == "write_file":
        with open(inside(args["path"]), "w", encoding="utf-8") as f:
            f.write(args["content"])
        return f"wrote {len(args['content'].encode())} bytes to {args['path']}"
    if name == "read_file":
        with open(inside(args["path"]), encoding="utf-8") as f:
            return f.read()
    if name == "run_shell":
        out = subprocess.run(["/bin/sh", "-c", args["command"]], capture_output=True, text=True, check=True)
        return out.stdout.strip()
    raise RuntimeError(f"unknown tool {name}")


def tool_loop():
    messages = [{"role": "system", "content": "You are a careful agent with file tools."},
                {"role": "user", "content": TASK}]
    for step in range(8):
        msg = complete(messages, TOOLS) if step % 2 == 0 else complete_stream(messages, TOOLS)
        messages.append(msg)
        if not msg.get("tool_calls"):
            print(f"final: {msg['content']}")
            return
        if msg.get("content"):
            print(f"say: {msg['content']}")
        for call in msg["tool_calls"]:
            args = json.loads(call["function"]["arguments"])
            print(f"tool: {call['function']['name']} {json.dumps(args, separators=(',', ':'), ensure_ascii=False)}")
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": run_tool(call["function"]["name"], args)})
    raise RuntimeError("the tool loop did not finish in 8 steps")


def main():
    hello = complete([{"role": "user", "content": "Say hello to the jukebox."}])
    print(f"chat: {hello['content']}")
    counted = complete_stream([{"role": "user", "content": "Count to five."}])
    print(f"stream: {counted['content']}")
    tool_loop()


if __name__ == "__main__":
    try:
        main()
    except Exception as err:  # noqa: BLE001 - any failure must fail the run
        print(f"agent failed: {err}", file=sys.stderr)
        sys.exit(1)
