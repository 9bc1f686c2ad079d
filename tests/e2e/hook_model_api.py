"""A stdlib mock of the model APIs, on loopback, that asks for one shell command: what makes a
client run its PreToolUse hooks.

- Anthropic Messages (``/v1/messages``): a ``Bash`` tool_use;
- OpenAI Responses (``/v1/responses``): an ``exec_command`` function call;
- Gemini (``:generateContent``, ``:streamGenerateContent``): a ``run_shell_command`` call (a side
  request that wants JSON back, model routing, gets the smallest value its schema takes).

While the conversation holds no tool result the answer is that one call; then a final text. Every
request body is kept, so a test reads what the client told the model after the call (a hook's
block reason, or the command's output). Wire formats as research/hooks.md recorded them.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FINAL = "MOCK_FINAL_TEXT"


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def _messages(body: dict[str, Any], command: str) -> bytes:
    answered = any(isinstance(m.get("content"), list) and any(b.get("type") == "tool_result" for b in m["content"])
                   for m in body.get("messages") or [])
    if answered:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": FINAL}
        stop = "end_turn"
    else:
        shell = next((t["name"] for t in body.get("tools") or [] if t.get("name", "").lower() == "bash"), "Bash")
        block = {"type": "tool_use", "id": "toolu_mock_1", "name": shell, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps({"command": command, "description": "mock command"})}
        stop = "tool_use"
    usage = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    message = {"id": "msg_mock", "type": "message", "role": "assistant", "model": body.get("model", "mock"), "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": usage}
    return _sse([
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ])


def _responses(body: dict[str, Any], command: str) -> bytes:
    answered = any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in body.get("input") or [])
    if answered:
        item = {"type": "message", "id": "msg_mock_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": FINAL, "annotations": []}]}
    else:
        item = {"type": "function_call", "id": "fc_mock_1", "call_id": "call_mock_1", "name": "exec_command",
                "arguments": json.dumps({"cmd": command})}
    usage = {"input_tokens": 10, "input_tokens_details": None, "output_tokens": 5, "output_tokens_details": None, "total_tokens": 15}
    return _sse([
        ("response.created", {"type": "response.created", "response": {"id": "resp_1"}}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": {"id": "resp_1", "usage": usage}}),
    ])


def _gemini(body: dict[str, Any], command: str) -> dict[str, Any]:
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    answered = any("functionResponse" in part for content in body.get("contents") or [] for part in content.get("parts") or [])
    if schema or config.get("responseMimeType") == "application/json":
        part: dict[str, Any] = {"text": json.dumps(_filling(schema))}
    elif answered:
        part = {"text": FINAL}
    else:
        part = {"functionCall": {"name": "run_shell_command", "args": {"command": command}}}
    return {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}


def _filling(schema: Any) -> Any:
    """The smallest value a JSON schema accepts."""
    if not isinstance(schema, dict):
        return {}
    if "enum" in schema:
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {key: _filling(properties.get(key, {})) for key in schema.get("required") or list(properties)}
    return {"string": "mock", "integer": 1, "number": 1, "boolean": False, "array": []}.get(kind)


class ModelApi:
    """``command``: the shell command the model asks for."""

    def __init__(self, command: str):
        self.command = command
        self.bodies: list[dict[str, Any]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                path = self.path.split("?")[0]
                if path.endswith("/count_tokens"):
                    return self._send("application/json", b'{"input_tokens": 10}')
                api.bodies.append(body)
                if path.endswith("/v1/messages"):
                    return self._send("text/event-stream", _messages(body, api.command))
                if path.endswith("/responses"):
                    return self._send("text/event-stream", _responses(body, api.command))
                if ":streamGenerateContent" in path:
                    return self._send("text/event-stream", f"data: {json.dumps(_gemini(body, api.command))}\n\n".encode())
                if ":generateContent" in path:
                    return self._send("application/json", json.dumps(_gemini(body, api.command)).encode())
                self.send_error(404)

            def _send(self, kind: str, payload: bytes) -> None:
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(payload)))
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def tool_results(self) -> list[str]:
        """What the client told the model about the tool call, in every request."""
        found = []
        for body in self.bodies:
            for message in body.get("messages") or []:
                for block in message.get("content") if isinstance(message.get("content"), list) else []:
                    if block.get("type") == "tool_result":
                        content = block.get("content")
                        found.append(content if isinstance(content, str) else json.dumps(content))
            found += [i.get("output", "") for i in body.get("input") or [] if isinstance(i, dict) and i.get("type") == "function_call_output"]
            found += [json.dumps(part["functionResponse"].get("response")) for content in body.get("contents") or []
                      for part in content.get("parts") or [] if "functionResponse" in part]
        return found

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
