"""Abort latency per provider: abort -> request answered while the model streams, for each wire
API the server speaks (issue 28: "the same abort latency on every adapter").

One server per provider, the scripted model on 127.0.0.1 speaking that provider's wire format:
chat completions (our own streamer, `openai-compatible:`), Anthropic Messages (the `anthropic`
SDK) and OpenAI Responses (the `openai` SDK), each pointed at the scripted model through the
provider's base-URL variable; and Claude on Bedrock and on Vertex (the `anthropic` SDK's own
clients) and Gemini (our streamGenerateContent adapter) against a loopback server that stalls
after the first delta (provider_abort_replay.py). The figure is bench/abort.py's mid-stream
figure; the baseline is the chat-completions streamer measured in the same run.
"""

from __future__ import annotations

from pathlib import Path

from . import scripts
from .abort import abort_mid_stream
from .client import BenchServer
from .config import BenchConfig
from .model import ScriptedModelProcess
from .provider_abort_replay import stalled_provider
from .stats import Goal, Row, Samples, ms


def providers(model: ScriptedModelProcess) -> dict[str, tuple[dict[str, str | int], dict[str, str]]]:
    """name -> (initialization options, environment)."""
    root = model.base_url.removesuffix("/v1")
    return {
        "chat completions (openai-compatible)": (
            {"model": "openai-compatible:scripted", "baseUrl": model.chat_url}, {}),
        "Anthropic Messages (anthropic SDK)": (
            {"model": "anthropic:claude-sonnet-4-5"}, {"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": root}),
        "OpenAI Responses (openai SDK)": (
            {"model": "openai:gpt-4.1"}, {"OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": model.base_url}),
    }


async def measure(config: BenchConfig, options: dict, env: dict[str, str], workspace: Path, home: Path) -> Samples:
    samples = Samples()
    server = await BenchServer(workspace, home).start({**options, "approval": "auto"}, env=env)
    try:
        await abort_mid_stream(server)  # warm-up: imports, the SDK's client, the first connection
        for _ in range(config.reps(40)):
            server.events.clear()
            samples.add(ms(await abort_mid_stream(server)))
    finally:
        await server.stop()
    return samples


async def run(config: BenchConfig) -> list[Row]:
    results: dict[str, Samples] = {}
    with ScriptedModelProcess(scripts.repeat(scripts.SLOW_TEXT)) as model:
        for index, (name, (options, env)) in enumerate(providers(model).items()):
            results[name] = await measure(
                config, options, env, config.folder(f"provider-abort/ws{index}"), config.folder(f"provider-abort/home{index}"))
    for index, wire in enumerate(("bedrock", "vertex", "gemini"), start=len(results)):
        folder = config.folder(f"provider-abort/{wire}")
        with stalled_provider(wire, config.reps(40) + 1, folder) as (name, options, env):
            results[name] = await measure(
                config, options, env, config.folder(f"provider-abort/ws{index}"), config.folder(f"provider-abort/home{index}"))
    base_name, baseline = next(iter(results.items()))
    return [
        Row(f"abort -> answered, model streaming, {name}", samples, baseline, base_name, Goal("p99", 50), ratio_of="p99")
        for name, samples in results.items()
    ]
