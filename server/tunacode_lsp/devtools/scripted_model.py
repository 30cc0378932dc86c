"""A scripted OpenAI-compatible model server on 127.0.0.1, for tests, the demo and benchmarks.

``POST /v1/chat/completions`` answers each request with the next turn of a script (see
``script.py`` and docs/scripted-model.md) as an SSE stream of OpenAI chunks, or as the
turn's HTTP error. Every request body is recorded (unless bodies are not decoded:
``--no-decode-bodies``, for benchmarks). Standard library only: asyncio streams
in a background thread with its own event loop, HTTP/1.1 with keep-alive and chunked
responses (so a dropped connection is visible to the client as an incomplete body).

Control endpoints for a server run as a separate process: ``GET /_scripted/requests``,
``POST /_scripted/script``, ``GET /healthz``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http
import itertools
import json
import signal
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tunacode_lsp.devtools.script import (
    DelayStep,
    DropStep,
    ErrorStep,
    FinishStep,
    RawStep,
    Script,
    ScriptError,
    ScriptSource,
    StallStep,
    TextStep,
    ThinkingStep,
    ToolCallStep,
    Turn,
    UsageStep,
    load_script,
)

MAX_HEADER_LINES = 100
MAX_BODY_BYTES = 64 * 1024 * 1024


class _BadRequest(Exception):
    """The client sent something that is not HTTP/1.1 we understand."""


class _ClientGone(Exception):
    """The client closed its connection while we were answering."""


@dataclass
class _Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def keep_alive(self) -> bool:
        return self.headers.get("connection", "").lower() != "close"


class ScriptedModelServer:
    """Serves a script over HTTP from a background thread (see the module docstring)."""

    def __init__(
        self, script: ScriptSource, host: str = "127.0.0.1", port: int = 0, *, decode_bodies: bool = True
    ) -> None:
        self._host = host
        # False (benchmarks only): a model call's body is not decoded; see undecoded_body.
        self._decode_bodies = decode_bodies
        self._port = port
        self._cond = threading.Condition()
        self._recorded: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []  # each model call's request headers (lower-case names)
        self.paths_seen: list[str] = []  # each model call's request path, without its query
        self._open_streams = 0
        self._accepted_connections = 0
        self._turns: deque[Turn] = deque()
        self._last_turn: Turn | None = None
        self._turns_served = 0
        self._on_exhausted = "error"
        self._call_ids = itertools.count(1)
        self._call_id_prefix = f"call_{uuid.uuid4().hex[:8]}"  # unique across server runs
        self.set_script(script)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    # ------------------------------------------------------------ lifecycle

    def start(self) -> ScriptedModelServer:
        if self._thread is not None:
            raise RuntimeError("scripted model server already started")
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._handle_connection, self._host, self._port)
                )
            except BaseException as exc:  # noqa: BLE001 - reported to start()'s caller
                failure.append(exc)
                ready.set()
                loop.close()
                return
            self._port = self._server.sockets[0].getsockname()[1]
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="scripted-model-server", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]
        return self

    def stop(self) -> None:
        """Close the listener and every connection, then join the thread."""

        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if not loop.is_closed():
            future = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            future.result(timeout=10)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        self._thread = None
        self._loop = None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        # Closing the sockets ends each handler normally (a cancelled handler task would
        # make asyncio's stream callback log a CancelledError traceback on Python 3.11).
        for writer in self._connections.values():
            writer.transport.abort()
        if self._connections:
            _, stragglers = await asyncio.wait(set(self._connections), timeout=2)
            for task in stragglers:
                task.cancel()
        if self._server is not None:
            await self._server.wait_closed()

    # ------------------------------------------------------------ public state

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self._port}/v1"

    @property
    def chat_url(self) -> str:
        return f"{self.base_url}/chat/completions"

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._cond:
            return list(self._recorded)

    @property
    def open_streams(self) -> int:
        with self._cond:
            return self._open_streams

    @property
    def accepted_connections(self) -> int:
        """Connections accepted so far (a client that reuses its connection keeps this at 1)."""

        with self._cond:
            return self._accepted_connections

    @property
    def remaining_turns(self) -> int:
        with self._cond:
            return len(self._turns)

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Block until at least n requests arrived; TimeoutError otherwise."""

        with self._cond:
            if not self._cond.wait_for(lambda: len(self._recorded) >= n, timeout=timeout):
                raise TimeoutError(
                    f"scripted model: waited {timeout} s for {n} request(s), "
                    f"got {len(self._recorded)}"
                )
            return list(self._recorded)

    def wait_for_closed(self, timeout: float = 5.0) -> bool:
        """Block until no stream is open (the client finished or closed each one)."""

        with self._cond:
            return self._cond.wait_for(lambda: self._open_streams == 0, timeout=timeout)

    def set_script(self, script: ScriptSource) -> None:
        """Replace the remaining turns (and the exhaustion policy) with a new script."""

        parsed: Script = load_script(script)
        with self._cond:
            self._turns = deque(parsed.turns)
            self._on_exhausted = parsed.on_exhausted
            self._last_turn = None

    def _record(self, body: dict[str, Any]) -> None:
        with self._cond:
            self._recorded.append(body)
            self._cond.notify_all()

    def _next_turn(self) -> tuple[Turn | None, int]:
        with self._cond:
            if self._turns:
                self._last_turn = self._turns.popleft()
                self._turns_served += 1
                return self._last_turn, self._turns_served
            if self._on_exhausted == "repeat_last" and self._last_turn is not None:
                self._turns_served += 1
                return self._last_turn, self._turns_served
            return None, self._turns_served

    def _stream_opened(self) -> None:
        with self._cond:
            self._open_streams += 1
            self._cond.notify_all()

    def _stream_closed(self) -> None:
        with self._cond:
            self._open_streams -= 1
            self._cond.notify_all()

    # ------------------------------------------------------------ connections

    async def _handle_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = writer
        with self._cond:
            self._accepted_connections += 1
        # drain() then waits until the kernel has every byte, so a drop comes after them.
        writer.transport.set_write_buffer_limits(high=0)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                keep_alive = await self._dispatch(request, reader, writer)
                if not keep_alive or not request.keep_alive:
                    break
        except _BadRequest as exc:
            with contextlib.suppress(_ClientGone, ConnectionError):
                await _send_json(writer, 400, _error_body(str(exc), "bad_request"), keep_alive=False)
        except (_ClientGone, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._connections.pop(task, None)
            if not writer.transport.is_closing():
                writer.close()

    async def _dispatch(
        self, request: _Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        route = (request.method, request.path.split("?", 1)[0].rstrip("/"))
        if route == ("GET", "/healthz"):
            return await _send_json(writer, 200, {"status": "ok"})
        if route == ("GET", "/_scripted/requests"):
            return await _send_json(writer, 200, self.requests)
        if route == ("POST", "/_scripted/script"):
            try:
                self.set_script(_parse_json_body(request.body))
            except (ScriptError, _BadRequest) as exc:
                return await _send_json(writer, 400, _error_body(str(exc), "invalid_script"))
            return await _send_json(writer, 200, {"remaining_turns": self.remaining_turns})
        if request.method == "POST" and route[1].endswith(("/chat/completions", "/messages", "/responses")):
            self.headers_seen.append({k: v for k, v in request.headers.items()})
            self.paths_seen.append(route[1])
            return await self._chat_completion(request, reader, writer)
        return await _send_json(
            writer, 404, _error_body(f"no route for {request.method} {request.path}", "not_found")
        )

    async def _chat_completion(
        self, request: _Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        try:
            body = _parse_json_body(request.body) if self._decode_bodies else undecoded_body(request.body)
        except _BadRequest as exc:
            return await _send_json(writer, 400, _error_body(str(exc), "invalid_request_error"))
        if not isinstance(body, dict):
            return await _send_json(
                writer, 400, _error_body("request body must be a JSON object", "invalid_request_error")
            )
        self._record(body)
        turn, served = self._next_turn()
        if turn is None:
            message = (
                f"scripted model: script exhausted after {served} turn(s); "
                f"request {len(self.requests)} has no turn left"
            )
            return await _send_json(writer, 500, _error_body(message, "script_exhausted"))
        if turn.error is None and body.get("stream") is not True:
            return await _send_json(
                writer,
                400,
                _error_body(
                    "scripted model only serves streaming requests (stream: true)",
                    "invalid_request_error",
                ),
            )
        self._stream_opened()
        client_gone = asyncio.ensure_future(reader.read(65536))
        try:
            wire = request.path.split("?", 1)[0].rstrip("/")
            answer_class = (
                _MessagesTurnAnswer if wire.endswith("/messages")
                else _ResponsesTurnAnswer if wire.endswith("/responses") else _TurnAnswer
            )
            answer = answer_class(self, turn, body, writer, client_gone, served)
            return await answer.send()
        finally:
            client_gone.cancel()
            # The watcher must be gone before the next request is read from this reader.
            await asyncio.wait({client_gone})
            self._stream_closed()

    def next_call_id(self) -> str:
        return f"{self._call_id_prefix}_{next(self._call_ids)}"


# ---------------------------------------------------------------- one turn on the wire


class _TurnAnswer:
    """Streams one turn as OpenAI chat.completion.chunk events (or its HTTP error)."""

    def __init__(
        self,
        server: ScriptedModelServer,
        turn: Turn,
        body: dict[str, Any],
        writer: asyncio.StreamWriter,
        client_gone: asyncio.Future[bytes],
        number: int,
    ) -> None:
        self._server = server
        self._turn = turn
        self._body = body
        self._writer = writer
        self._client_gone = client_gone
        self._chunk_id = f"chatcmpl-scripted-{number}"
        self._created = int(time.time())
        self._model = str(body.get("model") or "scripted-model")
        self._tool_index = 0
        self._finished = False
        self._completion_chars = 0
        self._reasoning_chars = 0

    async def send(self) -> bool:
        """Answer the turn; return whether the connection may serve another request."""

        if self._turn.replay is not None:  # a recorded stream, exactly as it was
            await _write(self._writer, _stream_head())
            await _write_chunk(self._writer, self._turn.replay.encode())
            await _write(self._writer, b"0\r\n\r\n")
            return True
        error = self._turn.error
        if error is not None:
            for step in self._turn.steps[:-1]:
                await self._pause(step.seconds)  # type: ignore[union-attr]  # only delay/stall precede an error
            return await _send_error_step(self._writer, error)
        await _write(self._writer, _stream_head())
        await self._send_chunk({"role": "assistant", "content": ""})
        for step in self._turn.steps:
            if isinstance(step, DropStep):
                self._writer.transport.abort()
                return False
            await self._send_step(step)
        if not self._finished:
            await self._send_finish(self._default_finish())
        if _wants_usage(self._body):
            await self._send_event(self._envelope(choices=[], usage=self._usage()))
        await self._send_data("[DONE]")
        await _write(self._writer, b"0\r\n\r\n")
        return True

    async def _send_step(self, step: object) -> None:
        if isinstance(step, TextStep):
            await self._send_pieces(step.text, step.chunks, step.delay, lambda p: {"content": p})
            self._completion_chars += len(step.text)
        elif isinstance(step, ThinkingStep):
            await self._send_pieces(
                step.thinking, step.chunks, step.delay, lambda p: {step.field: p}
            )
            self._completion_chars += len(step.thinking)
            self._reasoning_chars += len(step.thinking)
        elif isinstance(step, ToolCallStep):
            await self._send_tool_call(step)
        elif isinstance(step, FinishStep):
            await self._send_finish(step.reason)
        elif isinstance(step, RawStep):
            await _write_chunk(self._writer, step.data.encode())
        elif isinstance(step, DelayStep | StallStep):
            await self._pause(step.seconds)
        # UsageStep only shapes the final usage chunk.

    async def _send_pieces(self, text: str, chunks: int, delay: float, delta_of: Any) -> None:
        for index, piece in enumerate(_split(text, chunks)):
            if index and delay:
                await self._pause(delay)
            await self._send_chunk(delta_of(piece))

    async def _send_tool_call(self, step: ToolCallStep) -> None:
        index = self._tool_index
        self._tool_index += 1
        call_id = step.id or self._server.next_call_id()
        head = {"index": index, "id": call_id, "type": "function",
                "function": {"name": step.name, "arguments": ""}}
        await self._send_chunk({"tool_calls": [head]})
        arguments = step.arguments_text
        self._completion_chars += len(step.name) + len(arguments)
        for piece_index, piece in enumerate(_split(arguments, step.chunks)):
            if piece_index and step.delay:
                await self._pause(step.delay)
            await self._send_chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})

    async def _send_finish(self, reason: str) -> None:
        self._finished = True
        await self._send_event(
            self._envelope(choices=[{"index": 0, "delta": {}, "finish_reason": reason}])
        )

    def _default_finish(self) -> str:
        return "tool_calls" if self._turn.tool_calls else "stop"

    def _usage(self) -> dict[str, Any]:
        scripted = self._turn.usage or UsageStep()
        undecoded = self._body.get(UNDECODED_BYTES)
        messages_chars = undecoded if isinstance(undecoded, int) else len(json.dumps(self._body.get("messages", [])))
        prompt = scripted.prompt_tokens
        if prompt is None:
            prompt = max(1, messages_chars // 4)
        completion = scripted.completion_tokens
        if completion is None:
            completion = max(1, self._completion_chars // 4)
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": scripted.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": self._reasoning_chars // 4},
        }
        if scripted.cost is not None:
            usage["cost"] = scripted.cost
        return usage

    def _envelope(self, **fields: Any) -> dict[str, Any]:
        return {
            "id": self._chunk_id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            **fields,
        }

    async def _send_chunk(self, delta: dict[str, Any]) -> None:
        await self._send_event(
            self._envelope(choices=[{"index": 0, "delta": delta, "finish_reason": None}])
        )

    async def _send_event(self, payload: dict[str, Any]) -> None:
        await self._send_data(json.dumps(payload, separators=(",", ":")))

    async def _send_data(self, data: str) -> None:
        self._check_client()
        await _write_chunk(self._writer, f"data: {data}\n\n".encode())

    async def _pause(self, seconds: float) -> None:
        """Wait, but stop at once when the client closes the connection."""

        if seconds > 0:
            await asyncio.wait({self._client_gone}, timeout=seconds)
        self._check_client()

    def _check_client(self) -> None:
        if self._client_gone.done() or self._writer.transport.is_closing():
            raise _ClientGone()


class _MessagesTurnAnswer(_TurnAnswer):
    """Streams one turn as Anthropic Messages events (`POST /v1/messages`)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._block = -1
        self._open: str | None = None
        self._signatures = 0

    async def send(self) -> bool:
        if self._turn.replay is not None or self._turn.error is not None:
            return await super().send()
        await _write(self._writer, _stream_head())
        usage = self._turn.usage or UsageStep()
        prompt = usage.prompt_tokens if usage.prompt_tokens is not None else max(1, len(json.dumps(self._body)) // 4)
        start_usage = {
            "input_tokens": max(0, prompt - usage.cached_tokens), "output_tokens": 1,
            "cache_read_input_tokens": usage.cached_tokens, "cache_creation_input_tokens": 0,
        }
        message: dict[str, Any] = {"id": f"msg_scripted_{self._chunk_id}", "type": "message", "role": "assistant",
                   "model": self._model, "content": [], "stop_reason": None, "stop_sequence": None,
                   "usage": start_usage}
        await self._send_event({"type": "message_start", "message": message})
        for step in self._turn.steps:
            if isinstance(step, DropStep):
                self._writer.transport.abort()
                return False
            await self._send_step(step)
        await self._close_block()
        stop = "tool_use" if self._turn.tool_calls else "end_turn"
        if any(isinstance(step, FinishStep) and step.reason == "length" for step in self._turn.steps):
            stop = "max_tokens"
        output = usage.completion_tokens if usage.completion_tokens is not None else max(1, self._completion_chars // 4)
        await self._send_event({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                "usage": {"output_tokens": output}})
        await self._send_event({"type": "message_stop"})
        await _write(self._writer, b"0\r\n\r\n")
        return True

    async def _open_block(self, kind: str, block: dict[str, Any]) -> None:
        await self._close_block()
        self._block += 1
        self._open = kind
        await self._send_event({"type": "content_block_start", "index": self._block, "content_block": block})

    async def _close_block(self) -> None:
        if self._open is None:
            return
        if self._open == "thinking":
            self._signatures += 1
            await self._delta({"type": "signature_delta", "signature": f"scripted-signature-{self._signatures}"})
        self._open = None
        await self._send_event({"type": "content_block_stop", "index": self._block})

    async def _delta(self, delta: dict[str, Any]) -> None:
        await self._send_event({"type": "content_block_delta", "index": self._block, "delta": delta})

    async def _send_step(self, step: object) -> None:
        if isinstance(step, TextStep):
            if self._open != "text":
                await self._open_block("text", {"type": "text", "text": ""})
            for index, piece in enumerate(_split(step.text, step.chunks)):
                if index and step.delay:
                    await self._pause(step.delay)
                await self._delta({"type": "text_delta", "text": piece})
            self._completion_chars += len(step.text)
        elif isinstance(step, ThinkingStep):
            if self._open != "thinking":
                await self._open_block("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            for index, piece in enumerate(_split(step.thinking, step.chunks)):
                if index and step.delay:
                    await self._pause(step.delay)
                await self._delta({"type": "thinking_delta", "thinking": piece})
            self._completion_chars += len(step.thinking)
        elif isinstance(step, ToolCallStep):
            call_id = step.id or "toolu_" + self._server.next_call_id()
            await self._open_block("tool_use", {"type": "tool_use", "id": call_id, "name": step.name, "input": {}})
            for index, piece in enumerate(_split(step.arguments_text, step.chunks)):
                if index and step.delay:
                    await self._pause(step.delay)
                await self._delta({"type": "input_json_delta", "partial_json": piece})
            self._completion_chars += len(step.name) + len(step.arguments_text)
        elif isinstance(step, RawStep):
            await _write_chunk(self._writer, step.data.encode())
        elif isinstance(step, DelayStep | StallStep):
            await self._pause(step.seconds)

    async def _send_event(self, payload: dict[str, Any]) -> None:
        self._check_client()
        data = json.dumps(payload, separators=(",", ":"))
        await _write_chunk(self._writer, f"event: {payload['type']}\ndata: {data}\n\n".encode())


class _ResponsesTurnAnswer(_TurnAnswer):
    """Streams one turn as OpenAI Responses events (`POST /v1/responses`)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._items: list[dict[str, Any]] = []
        self._seq = 0
        self._text_item: dict[str, Any] | None = None
        self._response_id = f"resp_scripted_{self._chunk_id}"

    def _response(self, status: str, usage: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"id": self._response_id, "object": "response", "created_at": self._created, "status": status,
                "model": self._model, "output": list(self._items), "usage": usage}

    async def send(self) -> bool:
        if self._turn.replay is not None or self._turn.error is not None:
            return await super().send()
        await _write(self._writer, _stream_head())
        await self._send_event({"type": "response.created", "response": self._response("in_progress")})
        for step in self._turn.steps:
            if isinstance(step, DropStep):
                self._writer.transport.abort()
                return False
            await self._send_step(step)
        await self._end_text()
        scripted = self._turn.usage or UsageStep()
        prompt = scripted.prompt_tokens if scripted.prompt_tokens is not None else max(1, len(json.dumps(self._body)) // 4)
        output = scripted.completion_tokens if scripted.completion_tokens is not None else max(1, self._completion_chars // 4)
        usage = {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": scripted.cached_tokens},
                 "output_tokens": output, "output_tokens_details": {"reasoning_tokens": self._reasoning_chars // 4},
                 "total_tokens": prompt + output}
        length = any(isinstance(step, FinishStep) and step.reason == "length" for step in self._turn.steps)
        if length:
            response = self._response("incomplete", usage)
            response["incomplete_details"] = {"reason": "max_output_tokens"}
            await self._send_event({"type": "response.incomplete", "response": response})
        else:
            await self._send_event({"type": "response.completed", "response": self._response("completed", usage)})
        await _write(self._writer, b"0\r\n\r\n")
        return True

    async def _add_item(self, item: dict[str, Any]) -> int:
        self._items.append(item)
        index = len(self._items) - 1
        await self._send_event({"type": "response.output_item.added", "output_index": index, "item": item})
        return index

    async def _done_item(self, index: int) -> None:
        await self._send_event({"type": "response.output_item.done", "output_index": index, "item": self._items[index]})

    async def _end_text(self) -> None:
        item, self._text_item = self._text_item, None
        if item is None:
            return
        index = self._items.index(item)
        text = item["content"][0]["text"]
        await self._send_event({"type": "response.output_text.done", "item_id": item["id"], "output_index": index,
                                "content_index": 0, "text": text})
        item["status"] = "completed"
        await self._done_item(index)

    async def _send_step(self, step: object) -> None:
        if isinstance(step, TextStep):
            if self._text_item is None:
                self._text_item = {"id": f"msg_{len(self._items)}", "type": "message", "role": "assistant",
                                   "status": "in_progress", "content": [{"type": "output_text", "text": "", "annotations": []}]}
                await self._add_item(self._text_item)
            index = self._items.index(self._text_item)
            for n, piece in enumerate(_split(step.text, step.chunks)):
                if n and step.delay:
                    await self._pause(step.delay)
                self._text_item["content"][0]["text"] += piece
                await self._send_event({"type": "response.output_text.delta", "item_id": self._text_item["id"],
                                        "output_index": index, "content_index": 0, "delta": piece})
            self._completion_chars += len(step.text)
        elif isinstance(step, ThinkingStep):
            await self._end_text()
            item_id = f"rs_{len(self._items)}"
            index = await self._add_item({"id": item_id, "type": "reasoning", "summary": []})
            for piece in _split(step.thinking, step.chunks):
                await self._send_event({"type": "response.reasoning_summary_text.delta", "item_id": item_id,
                                        "output_index": index, "summary_index": 0, "delta": piece})
            self._items[index] = {"id": item_id, "type": "reasoning",
                                  "summary": [{"type": "summary_text", "text": step.thinking}],
                                  "encrypted_content": f"scripted-encrypted-{item_id}"}
            await self._done_item(index)
            self._completion_chars += len(step.thinking)
            self._reasoning_chars += len(step.thinking)
        elif isinstance(step, ToolCallStep):
            await self._end_text()
            call_id = step.id or self._server.next_call_id()
            item = {"id": f"fc_{len(self._items)}", "type": "function_call", "status": "in_progress",
                    "call_id": call_id, "name": step.name, "arguments": ""}
            index = await self._add_item(item)
            for n, piece in enumerate(_split(step.arguments_text, step.chunks)):
                if n and step.delay:
                    await self._pause(step.delay)
                await self._send_event({"type": "response.function_call_arguments.delta", "item_id": item["id"],
                                        "output_index": index, "delta": piece})
            item["arguments"] = step.arguments_text
            item["status"] = "completed"
            await self._send_event({"type": "response.function_call_arguments.done", "item_id": item["id"],
                                    "output_index": index, "arguments": step.arguments_text})
            await self._done_item(index)
            self._completion_chars += len(step.name) + len(step.arguments_text)
        elif isinstance(step, RawStep):
            await _write_chunk(self._writer, step.data.encode())
        elif isinstance(step, DelayStep | StallStep):
            await self._pause(step.seconds)

    async def _send_event(self, payload: dict[str, Any]) -> None:
        self._check_client()
        payload = {**payload, "sequence_number": self._seq}
        self._seq += 1
        data = json.dumps(payload, separators=(",", ":"))
        await _write_chunk(self._writer, f"event: {payload['type']}\ndata: {data}\n\n".encode())


def _wants_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def _split(text: str, chunks: int) -> list[str]:
    """Split text into `chunks` nearly equal pieces (fewer if the text is shorter)."""

    count = max(1, min(chunks, len(text)))
    size, extra = divmod(len(text), count)
    pieces, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


# ---------------------------------------------------------------- HTTP/1.1 plumbing


async def _read_request(reader: asyncio.StreamReader) -> _Request | None:
    try:
        line = await reader.readline()
    except (ConnectionError, ValueError):
        return None
    if not line:
        return None
    parts = line.decode("latin-1").strip().split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(f"malformed request line: {line[:100]!r}")
    method, path, _version = parts
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADER_LINES):
        header_line = await reader.readline()
        if header_line in (b"\r\n", b"\n", b""):
            break
        name, sep, value = header_line.decode("latin-1").partition(":")
        if not sep:
            raise _BadRequest(f"malformed header line: {header_line[:100]!r}")
        headers[name.strip().lower()] = value.strip()
    else:
        raise _BadRequest("too many header lines")
    return _Request(method.upper(), path, headers, await _read_body(reader, headers))


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            size_line = await reader.readline()
            try:
                size = int(size_line.split(b";")[0].strip(), 16)
            except ValueError as exc:
                raise _BadRequest(f"malformed chunk size: {size_line[:50]!r}") from exc
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(body)
            body += await reader.readexactly(size)
            await reader.readline()
            if len(body) > MAX_BODY_BYTES:
                raise _BadRequest("request body too large")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError as exc:
        raise _BadRequest("malformed Content-Length") from exc
    if not 0 <= length <= MAX_BODY_BYTES:
        raise _BadRequest("bad Content-Length")
    return await reader.readexactly(length) if length else b""


UNDECODED_BYTES = "undecoded_bytes"


def undecoded_body(body: bytes) -> dict[str, Any]:
    """What a model call's body stands for when bodies are not decoded (`--no-decode-bodies`,
    for benchmarks: decoding a long session's ~4 MB body takes the model's process a core
    for ~0.2 s, a cost a remote provider never puts on the user's machine). Only its length
    is kept: it is taken for a streaming request that asks for usage, and the prompt's
    default token count is the length / 4."""
    return {"stream": True, "stream_options": {"include_usage": True}, UNDECODED_BYTES: len(body)}


def _parse_json_body(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _BadRequest(f"request body is not valid JSON: {exc}") from exc


def _error_body(message: str, error_type: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type}}


def _status_line(status: int) -> str:
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    return f"HTTP/1.1 {status} {phrase}\r\n"


def _stream_head() -> bytes:
    return (
        _status_line(200)
        + "Content-Type: text/event-stream\r\n"
        + "Cache-Control: no-cache\r\n"
        + "Transfer-Encoding: chunked\r\n"
        + "Connection: keep-alive\r\n\r\n"
    ).encode()


async def _send_response(
    writer: asyncio.StreamWriter,
    status: int,
    body: bytes,
    content_type: str,
    extra_headers: dict[str, str] | None = None,
    *,
    keep_alive: bool = True,
) -> bool:
    head = _status_line(status) + f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    for name, value in (extra_headers or {}).items():
        head += f"{name}: {value}\r\n"
    head += f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    await _write(writer, head.encode() + body)
    return keep_alive


async def _send_json(
    writer: asyncio.StreamWriter, status: int, payload: Any, *, keep_alive: bool = True
) -> bool:
    return await _send_response(
        writer, status, json.dumps(payload).encode(), "application/json", keep_alive=keep_alive
    )


async def _send_error_step(writer: asyncio.StreamWriter, error: ErrorStep) -> bool:
    if isinstance(error.body, str):
        body, content_type = error.body.encode(), "text/plain; charset=utf-8"
    else:
        body, content_type = json.dumps(error.body).encode(), "application/json"
    return await _send_response(writer, error.status, body, content_type, error.headers)


async def _write_chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
    await _write(writer, f"{len(data):x}\r\n".encode() + data + b"\r\n")


async def _write(writer: asyncio.StreamWriter, data: bytes) -> None:
    if writer.transport.is_closing():
        raise _ClientGone()
    writer.write(data)
    await writer.drain()


# ---------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a script until SIGINT/SIGTERM: ``--script FILE --port N [--host 127.0.0.1]``."""

    parser = argparse.ArgumentParser(
        prog="scripted-model", description="Serve a scripted OpenAI-compatible model."
    )
    parser.add_argument("--script", required=True, help="script JSON file")
    parser.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--no-decode-bodies", action="store_true",
        help="benchmarks: do not decode model call bodies (each is recorded as its length only)",
    )
    args = parser.parse_args(argv)
    try:
        server = ScriptedModelServer(
            args.script, host=args.host, port=args.port, decode_bodies=not args.no_decode_bodies
        )
    except ScriptError as exc:
        print(f"scripted-model: {exc}", file=sys.stderr)
        return 2
    stop_requested = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stop_requested.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            server.start()
        except OSError as exc:
            print(f"scripted-model: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
            return 1
        print(f"scripted model listening on {server.base_url}", flush=True)
        stop_requested.wait()
        server.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
