"""Stdlib mocks of the model APIs the clients speak, on loopback.

One HTTP server answers the four wire protocols by path:

- Anthropic Messages (``/v1/messages``): Claude Code;
- OpenAI Responses (``/v1/responses``): Codex;
- OpenAI chat completions (``/v1/chat/completions``): OpenCode, Qwen Code, Copilot CLI;
- Gemini (``/v1beta/models/M:generateContent`` and ``:streamGenerateContent``): Gemini CLI.

Every request is recorded. The answer is one text message, or — when a tool whose name contains
``call`` is offered and the conversation holds no tool result yet — one call to that tool, with
``arguments`` (none unless a test sets them). So a run costs two model turns when a tool is
called and one otherwise.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Json = dict[str, Any]
FINAL_TEXT = "MOCK-DONE"
USAGE_CHAT = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


@dataclass(frozen=True)
class Recorded:
    path: str
    body: Any  # the parsed JSON body (None for a GET)
    protocol: Protocol | None


@dataclass(frozen=True)
class Answer:
    """One model turn: a text, or a call of ``tool`` with ``arguments``."""

    tool: str | None = None
    text: str = FINAL_TEXT
    arguments: Json = field(default_factory=dict)


class Protocol:
    """One wire protocol: where it is served, how a request offers tools and carries tool
    results, and how an answer is streamed back."""

    def serves(self, path: str) -> bool:
        raise NotImplementedError

    def offered(self, body: Json) -> dict[str, Json]:
        """Tool name -> its parameter schema, as offered to the model."""
        raise NotImplementedError

    def results(self, body: Json) -> list[str]:
        """The texts of the tool results the conversation carries."""
        raise NotImplementedError

    def respond(self, path: str, body: Json, answer: Answer) -> tuple[str, bytes]:
        """(content type, body)."""
        raise NotImplementedError

    def main_turn(self, body: Json) -> bool:
        """A request of the session's conversation (side requests — titles, routing — offer no tools)."""
        return bool(self.offered(body))


def _sse(events: list[tuple[str | None, Any]]) -> tuple[str, bytes]:
    chunks = []
    for event, data in events:
        head = f"event: {event}\n" if event else ""
        chunks.append(f"{head}data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return "text/event-stream", "".join(chunks).encode()


def _text_of(content: Any) -> str:
    """A tool result's content as text: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(part.get("text", part.get("content"))) for part in content if isinstance(part, dict))
    return "" if content is None else json.dumps(content)


class AnthropicMessages(Protocol):
    def serves(self, path: str) -> bool:
        return path.split("?")[0].endswith("/v1/messages")

    def offered(self, body: Json) -> dict[str, Json]:
        return {t["name"]: t.get("input_schema") or {} for t in body.get("tools") or [] if "name" in t}

    def results(self, body: Json) -> list[str]:
        return [_text_of(block.get("content")) for message in body.get("messages") or [] if isinstance(message.get("content"), list)
                for block in message["content"] if block.get("type") == "tool_result"]

    def respond(self, path: str, body: Json, answer: Answer) -> tuple[str, bytes]:
        if answer.tool:
            block = {"type": "tool_use", "id": "toolu_mock_1", "name": answer.tool, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(answer.arguments)}
            stop = "tool_use"
        else:
            block, delta, stop = {"type": "text", "text": ""}, {"type": "text_delta", "text": answer.text}, "end_turn"
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


class OpenAIResponses(Protocol):
    def serves(self, path: str) -> bool:
        return path.split("?")[0].endswith("/responses")

    def offered(self, body: Json) -> dict[str, Json]:
        found: dict[str, Json] = {}
        for tool in body.get("tools") or []:
            if tool.get("type") == "namespace":  # tools grouped under a namespace (MCP servers)
                for inner in tool.get("tools") or []:
                    found[f"{tool['name']}__{inner['name']}"] = inner.get("parameters") or {}
            elif "name" in tool:
                found[tool["name"]] = tool.get("parameters") or {}
        return found

    def results(self, body: Json) -> list[str]:
        items = body.get("input") if isinstance(body.get("input"), list) else []
        return [_text_of(i.get("output")) for i in items if i.get("type") in ("function_call_output", "custom_tool_call_output")]

    def respond(self, path: str, body: Json, answer: Answer) -> tuple[str, bytes]:
        if answer.tool:
            item = {"type": "function_call", "id": "fc_mock_1", "call_id": "call_mock_1", "name": answer.tool, "arguments": json.dumps(answer.arguments)}
            for tool in body.get("tools") or []:
                prefix = f"{tool.get('name')}__"
                if tool.get("type") == "namespace" and answer.tool.startswith(prefix):
                    item.update(namespace=tool["name"], name=answer.tool[len(prefix):])
        else:
            item = {"type": "message", "id": "msg_mock_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": answer.text, "annotations": []}]}
        usage = {"input_tokens": 10, "input_tokens_details": None, "output_tokens": 5, "output_tokens_details": None, "total_tokens": 15}
        return _sse([
            ("response.created", {"type": "response.created", "response": {"id": "resp_mock"}}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": {"id": "resp_mock", "usage": usage}}),
        ])


class OpenAIChat(Protocol):
    def serves(self, path: str) -> bool:
        return path.split("?")[0].endswith("/chat/completions")

    def offered(self, body: Json) -> dict[str, Json]:
        return {t["function"]["name"]: t["function"].get("parameters") or {} for t in body.get("tools") or [] if "function" in t}

    def results(self, body: Json) -> list[str]:
        return [_text_of(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "tool"]

    def respond(self, path: str, body: Json, answer: Answer) -> tuple[str, bytes]:
        base = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": body.get("model", "mock-model")}
        if answer.tool:
            call = {"index": 0, "id": "call_mock_1", "type": "function", "function": {"name": answer.tool, "arguments": json.dumps(answer.arguments)}}
            delta, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        else:
            delta, finish = {"role": "assistant", "content": answer.text}, "stop"
        if not body.get("stream"):
            message = dict(delta, tool_calls=[{k: v for k, v in call.items() if k != "index"}]) if answer.tool else delta
            full = dict(base, object="chat.completion", choices=[{"index": 0, "message": message, "finish_reason": finish}], usage=USAGE_CHAT)
            return "application/json", json.dumps(full).encode()
        return _sse([
            (None, dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}])),
            (None, dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}])),
            (None, dict(base, choices=[], usage=USAGE_CHAT)),
            (None, "[DONE]"),
        ])


class Gemini(Protocol):
    def serves(self, path: str) -> bool:
        return ":generateContent" in path or ":streamGenerateContent" in path

    def offered(self, body: Json) -> dict[str, Json]:
        return {d["name"]: d.get("parametersJsonSchema") or d.get("parameters") or {}
                for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []}

    def results(self, body: Json) -> list[str]:
        responses = [part["functionResponse"].get("response") or {} for content in body.get("contents") or []
                     for part in content.get("parts") or [] if "functionResponse" in part]
        return [_text_of(r["output"] if "output" in r else r.get("error")) for r in responses]  # a refused call gives its error

    def respond(self, path: str, body: Json, answer: Answer) -> tuple[str, bytes]:
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if answer.tool:
            part: Json = {"functionCall": {"name": answer.tool, "args": answer.arguments}}
        elif schema or config.get("responseMimeType") == "application/json":
            part = {"text": json.dumps(_filling(schema))}  # a side request (model routing) that wants JSON back
        else:
            part = {"text": answer.text}
        reply = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}
        return _sse([(None, reply)]) if ":streamGenerateContent" in path else ("application/json", json.dumps(reply).encode())


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


PROTOCOLS: tuple[Protocol, ...] = (AnthropicMessages(), OpenAIResponses(), OpenAIChat(), Gemini())


class ModelApi:
    """The mock server: ``url`` is its base; ``call`` names the tool to call when offered."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.call: str | None = None
        self.arguments: Json = {}  # of the call
        self.force: str | None = None  # a tool (its full name, as the client names it) called whether offered or not
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> ModelApi:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def forget(self) -> None:
        with self._lock:
            self.requests.clear()

    def answer(self, protocol: Protocol, body: Json) -> Answer:
        if self.force is not None and not protocol.results(body):
            return Answer(tool=self.force, arguments=self.arguments)  # a model that asks for a tool it was not offered
        if self.call is None or protocol.results(body):
            return Answer()
        offered = protocol.offered(body)
        tool = self.call if self.call in offered else next((name for name in offered if self.call in name), None)  # the exact name first
        return Answer(tool=tool, arguments=self.arguments)

    def record(self, entry: Recorded) -> None:
        with self._lock:
            self.requests.append(entry)

    # ------------------------------------------------------------------- what the model was shown

    def conversation(self) -> list[Recorded]:
        return [r for r in list(self.requests) if r.protocol is not None and isinstance(r.body, dict) and r.protocol.main_turn(r.body)]

    def offered(self) -> dict[str, Json]:
        """The tools of the session's first model turn (name -> parameter schema)."""
        turns = self.conversation()
        return turns[0].protocol.offered(turns[0].body) if turns else {}

    def told(self, text: str) -> bool:
        """Whether ``text`` is anywhere in what the model was sent (its prompt, tools, results)."""
        return any(text in json.dumps(r.body) for r in self.conversation())

    def results(self) -> list[str]:
        """The tool results the model was given, once each (every turn repeats the history)."""
        return list(dict.fromkeys(text for r in self.conversation() for text in r.protocol.results(r.body)))


def _handler(api: ModelApi) -> Callable[..., BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, content_type: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            api.record(Recorded(self.path, None, None))
            if self.path.split("?")[0].rstrip("/").endswith("/models"):
                listing = {"object": "list", "data": [{"id": "mock-model", "object": "model", "created": 0, "owned_by": "mock"}]}
                return self._send(200, "application/json", json.dumps(listing).encode())
            self._send(404, "application/json", b'{"error": {"message": "not found"}}')

        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(size) if size else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            protocol = next((p for p in PROTOCOLS if p.serves(self.path)), None)
            api.record(Recorded(self.path, body, protocol))
            if "count_tokens" in self.path or ":countTokens" in self.path:
                return self._send(200, "application/json", b'{"input_tokens": 10, "totalTokens": 10}')
            if protocol is None or not isinstance(body, dict):
                return self._send(404, "application/json", b'{"error": {"message": "mock: unknown path"}}')
            self._send(200, *protocol.respond(self.path, body, api.answer(protocol, body)))

    return Handler
