"""The pygls plumbing of the language server: everything that adjusts pygls 2 itself.

- `TunaProtocol` (pygls's LanguageServerProtocol): the LSP lifecycle rules (-32002 before
  `initialize`, one `initialize`, -32600 after `shutdown`), every outgoing message redacted,
  `exit` (0 after a successful `shutdown`, else 1; open progress ended first), command
  handlers given the whole ExecuteCommandParams (the workDoneToken lives there), params
  pygls cannot structure answered InvalidParams, and `$/cancelRequest` routed through the
  server's cancellation registry (lsp/cancels.py) before pygls's own.
- `StdioLanguageServer`: stdio read by the event loop itself (lsp/framing.py cuts frames,
  checks JSON-RPC 2.0 and bounds a message's size), each checked message dispatched to
  pygls, a failure answered, never with a traceback.

The handlers (lsp/server.py, lsp/commands.py) stay thin and know none of this.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import signal
import stat
import sys
import threading
from typing import TYPE_CHECKING, Any

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from tunacode_lsp.contract.names import PROTOCOL_VERSION, REQUEST_CANCELLED
from tunacode_lsp.core.redact import message_json
from tunacode_lsp.lsp.framing import FrameReader, OversizedMessage, check_message, error_response
from tunacode_lsp.lsp.pygls_compat import resolve_raw_answer, send_payload
from tunacode_lsp.lsp.start_up_gc import start_up_done

if TYPE_CHECKING:
    from tunacode_lsp.lsp.server import TunaLanguageServer

log = logging.getLogger(__name__)
PYGLS_LOG = logging.getLogger("pygls.protocol.json_rpc")  # pygls's own logger for what it sends

IGNORED = "$/tunacode/ignored"  # stands in for a message already answered with an error
SERVER_NOT_INITIALIZED = -32002
INVALID_REQUEST = -32600
UNREDACTED_METHODS = frozenset({types.WORKSPACE_APPLY_EDIT})  # the text of the user's own file


class TunaProtocol(LanguageServerProtocol):
    _server: TunaLanguageServer
    _initialize_seen = False

    def handle_message(self, message: Any) -> None:
        """The lifecycle rules of the LSP base protocol: before `initialize` a request is
        -32002 and a notification is dropped (`exit` aside); `initialize` comes once; after
        `shutdown` a request is -32600 (pygls would drop it silently)."""

        method = getattr(message, "method", None)
        msg_id = getattr(message, "id", None)
        is_request = method is not None and msg_id is not None and hasattr(message, "params")
        if method == types.EXIT:
            return super().handle_message(message)
        if self._shutdown:
            if is_request:
                self._refuse(msg_id, INVALID_REQUEST, f"the server is shutting down; {method} is not served")
            return None
        if method == types.INITIALIZE:
            if self._initialize_seen:
                self._refuse(msg_id, INVALID_REQUEST, "initialize was already sent")
                return None
            self._initialize_seen = True
        elif method is not None and not self._initialize_seen:
            if is_request:
                self._refuse(msg_id, SERVER_NOT_INITIALIZED, f"{method}: the server is not initialized yet")
            return None
        return super().handle_message(message)

    def _send_data(self, data: Any) -> None:
        """Every message to the client goes out redacted (core/redact.py), but the edits of a
        file it is asked to apply: the one choke point of this channel. What pygls's own
        `_send_data` does, with the message encoded once (`message_json`), not twice (the
        redactor's JSON, then pygls's again)."""

        if not data:
            return
        if self.writer is None:  # no transport: pygls says so
            return super()._send_data(data)
        try:
            body = message_json(data, default=self._serialize_message, keep=UNREDACTED_METHODS)
            if PYGLS_LOG.isEnabledFor(logging.INFO):
                PYGLS_LOG.info("Sending data: %s", body.decode("utf-8", "replace"))
            if self._include_headers:
                header = f"Content-Length: {len(body)}\r\nContent-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
                body = header.encode("ascii") + body
            written = self.writer.write(body)
            if inspect.isawaitable(written):  # an async writer (websockets)
                asyncio.ensure_future(written)
        except BrokenPipeError:
            PYGLS_LOG.exception("Error sending data. BrokenPipeError")
            raise
        except Exception as error:  # noqa: BLE001 - as pygls: reported, the server goes on
            PYGLS_LOG.exception("Error sending data")
            self._server._report_server_error(error, JsonRpcInternalError)

    def _refuse(self, msg_id: Any, code: int, message: str) -> None:
        self._send_response(msg_id, error=JsonRpcException(code=code, message=message).to_response_error())

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any):
        """Exit at once: 0 after `shutdown`, else 1 (LSP). No garbage collection of the whole
        heap at interpreter exit (about 250 ms): what must end is ended here."""

        code = 0 if self._shutdown else 1
        for pending in self._server.requests.pending():  # queued requests are answered before the process goes
            if pending.queued and pending.tag is not None:
                self._refuse(pending.tag, REQUEST_CANCELLED, f"request {pending.request_id} was dropped: the server exited")
        self._server.requests.abort_all()
        self._server.requests.end_progress_now("exited")  # no spinner left open in the client
        kill_leftover_commands()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        logging.shutdown()
        os._exit(code)
        yield  # a generator, as pygls expects of lsp methods

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"tunacode": {"protocolVersion": PROTOCOL_VERSION}}
        try:
            asyncio.get_running_loop().call_soon(start_up_done)  # once the answer is out (lsp/start_up_gc.py)
        except RuntimeError:  # not on an event loop
            start_up_done()
        return result

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams):
        handler = self.fm.commands.get(params.command)
        if handler is None:
            raise JsonRpcInvalidParams(message=f"unknown command {params.command!r}")
        result = yield handler, (params,), None
        return result

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any):
        # pygls 2.1 cancels pending requests while iterating the dict that the cancellation
        # callbacks remove them from (RuntimeError); iterate a copy instead.
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    def structure_message(self, data: dict[str, Any]):
        """pygls drops a request whose params it cannot structure (`arguments: 5`), and the
        client waits forever; answer it with InvalidParams instead."""

        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if not ("jsonrpc" in data and "id" in data and "method" in data):
                raise
            cause = exc.__cause__
            detail = "; ".join(cattrs.transform_error(cause, path="params")) if isinstance(cause, cattrs.BaseValidationError) else str(exc)
            self._send_response(data["id"], error=JsonRpcInvalidParams(message=f"{data['method']}: {detail}").to_response_error())
            return JsonRPCNotification(method=IGNORED, jsonrpc=self.VERSION, params=None)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        if self._server.cancels.cancel(msg_id):
            return  # the request answers RequestCancelled itself
        super()._handle_cancel_notification(msg_id)


class StdioLanguageServer(LanguageServer):
    """pygls's LanguageServer serving stdio on the event loop (see the module docstring)."""

    def _on_signal(self, signum: signal.Signals) -> None:
        raise NotImplementedError

    async def stop_now(self, why: str) -> None:
        raise NotImplementedError

    def _start_io_async(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve stdio with stdin read by the event loop itself, not a thread.

        pygls reads each header line and body on its thread pool, so every message makes
        several thread-to-loop hops; while requests stream those hops queue behind the
        streams (a `tunacode.status` took 100+ ms). A pipe is read natively instead; anything
        else (a file, a terminal) falls back to pygls's reader."""

        stdin = stdin or sys.stdin.buffer
        try:
            is_pipe = stat.S_ISFIFO(os.fstat(stdin.fileno()).st_mode) or stat.S_ISSOCK(os.fstat(stdin.fileno()).st_mode)
        except (AttributeError, OSError, ValueError):
            is_pipe = False
        if not is_pipe:
            return super()._start_io_async(stdin, stdout)

        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

        async def serve() -> None:
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGHUP):  # like shutdown, then exit
                loop.add_signal_handler(signum, self._on_signal, signum)
            reader = asyncio.StreamReader()
            await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
            frames = FrameReader(reader.read)  # resynchronises after a malformed header; bounded
            while (body := await frames.next_body()) is not None:
                if isinstance(body, OversizedMessage):  # answered, never left waiting
                    send_payload(self.protocol, body.error())
                    continue
                data, error = check_message(body)  # -32700 / -32600 per JSON-RPC 2.0
                if error is not None:
                    send_payload(self.protocol, error)
                if data is not None:
                    self._dispatch(data)
            # stdin closed (the client is gone): settle every request before leaving
            await self.stop_now("the client closed the connection")

        try:
            asyncio.run(serve())
        except BrokenPipeError:
            log.error("Connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def _dispatch(self, data: dict[str, Any]) -> None:
        """One checked message to pygls; a failure answers the request, never with a traceback.
        An answer pygls cannot structure (a bare "Allow" to showMessageRequest) is handed to the
        waiting request as it came, and read there (a denial)."""

        try:
            self.protocol.handle_message(self.protocol.structure_message(data))
        except Exception as exc:  # noqa: BLE001
            if "method" not in data and "id" in data:
                resolve_raw_answer(self.protocol, data.get("id"), data.get("result"))
                return
            log.error("could not handle %s: %s", data.get("method"), exc)
            if "id" in data and "method" in data:
                code = getattr(exc, "code", None) or INVALID_REQUEST
                message = getattr(exc, "message", None) or "cannot handle this message"
                send_payload(self.protocol, error_response(data["id"], code, f"{data['method']}: {message}"))


def kill_leftover_commands() -> None:
    """Shell commands' leftovers, if the shell tool was ever loaded (tools/bash.py)."""

    bash = sys.modules.get("tunacode_lsp.tools.bash")
    if bash is not None:
        bash.kill_leftovers()
