"""An abort that lands as the model's response arrives still closes that response.

`client.send()` can finish (headers in) in the same loop turn as the abort signal is set;
the stream then ends "aborted" and must close the response it will never read, or the
connection stays open until the model gives up (the compaction cancel test saw it about
half the time). The abort is set by an httpx response hook on a real client, right when
the scripted model's headers arrive: deterministic, no mocks.
"""

from __future__ import annotations

import asyncio

import httpx
from tinyagent import Context, SimpleStreamOptions, TextContent, UserMessage

from tunacode_lsp.agent.provider.openai_chat import (
    OpenAIChatStream,
    OpenAICompatModel,
    build_headers,
    build_request_body,
)


async def test_an_abort_set_as_the_headers_arrive_closes_the_response(serve) -> None:
    server = serve([{"steps": [{"text": "partial"}, {"stall": 60}]}])
    signal = asyncio.Event()

    async def abort_on_headers(_response: httpx.Response) -> None:
        signal.set()

    model = OpenAICompatModel(provider="openai-compatible", id="scripted", base_url=server.chat_url)
    context = Context(messages=[UserMessage(content=[TextContent(text="hi")])])
    options = SimpleStreamOptions(signal=signal)
    async with httpx.AsyncClient(timeout=None, event_hooks={"response": [abort_on_headers]}) as client:
        stream = OpenAIChatStream(
            model=model,
            body=build_request_body(model, context, options),
            headers=build_headers(model, options),
            signal=signal,
            client=client,
        )
        events = [event async for event in stream]
        final = await stream.result()
        assert final.stop_reason == "aborted" and events[-1].type == "error"
        assert await asyncio.to_thread(server.wait_for_closed, 5), "the aborted response was left open"
