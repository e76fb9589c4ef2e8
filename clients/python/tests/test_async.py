"""AsyncClient: the same answers as the sync Client, tokens as they arrive,
several jobs at once on one client."""
import asyncio
import time

import pytest

from conftest import submit_lines, text_of, token_ids

from troupe_client import AsyncClient, BadRequestError, Client, UnknownSessionError


def test_async_generate_and_stream_equal_the_cli(cluster):
    async def main():
        async with AsyncClient.from_cluster(cluster.dir) as client:
            result = await client.generate("Tell me about owls.", temperature=0.7, seed=99, max_tokens=20)
            tokens, arrivals = [], []
            stream = client.stream("Tell me about owls.", temperature=0.7, seed=99, max_tokens=20)
            async for token in stream:
                assert stream.result is None
                arrivals.append(time.monotonic())
                tokens.append(token)
            return result, tokens, arrivals, stream.result

    result, tokens, arrivals, streamed = asyncio.run(main())
    lines = submit_lines(cluster, "Tell me about owls.", "--temperature", "0.7", "--seed", "99", "--max-tokens", "20")
    assert result.tokens == token_ids(lines) and result.text == text_of(lines)
    assert [t.token_id for t in tokens] == result.tokens == streamed.tokens
    assert "".join(t.text for t in tokens) == streamed.text
    assert [t.index for t in tokens] == list(range(len(tokens)))
    assert arrivals[-1] - arrivals[0] > 0.5 * streamed.timings.decode_seconds


def test_async_jobs_run_concurrently_on_one_client(cluster):
    prompts = ["Red", "Green", "Blue"]

    async def main():
        async with AsyncClient.from_cluster(cluster.dir) as client:
            return await asyncio.gather(*(client.generate(p, max_tokens=8) for p in prompts))

    results = asyncio.run(main())
    with Client.from_cluster(cluster.dir) as sync:
        assert [r.tokens for r in results] == [sync.generate(p, max_tokens=8).tokens for p in prompts]
    assert len({r.job_id for r in results}) == 3


def test_async_chat_session_errors_and_queries(cluster):
    async def main():
        async with AsyncClient.from_cluster(cluster.dir) as client:
            chat = await client.chat("Say hello 👋", max_tokens=8)
            async with client.session() as s:
                first = await s.chat("What is the capital of Italy?", max_tokens=10)
                second = await s.chat("And of Spain?", max_tokens=10)
                listed = {k.name: k for k in await client.sessions()}
                assert listed[s.name].jobs == 2
            assert s.name not in {k.name for k in await client.sessions()}
            with pytest.raises(BadRequestError, match="top_k"):
                await client.generate("x", top_k=-3)
            with pytest.raises(UnknownSessionError):
                await client.generate("x", session="async-never-opened")
            metrics = await client.metrics()
            return chat, first, second, metrics

    chat, first, second, metrics = asyncio.run(main())
    lines = submit_lines(cluster, "Say hello 👋", "--chat", "--max-tokens", "8")
    assert chat.text == text_of(lines)
    assert second.usage.cached_tokens > 0
    assert second.usage.prompt_tokens > first.usage.prompt_tokens + first.usage.completion_tokens
    assert metrics.counters["head/prompt_tokens_reused_total"] > 0


def test_async_status_cancel_and_early_close(cluster):
    from troupe_client import CancelledError, UnknownJobError

    async def main():
        async with AsyncClient.from_cluster(cluster.dir) as client:
            stream = client.stream("Count:", max_tokens=300, min_tokens=300)
            first = await stream.__anext__()
            status = await client.status(stream.job_id)
            assert status.state == "running" and status.job_id == stream.job_id
            assert (await client.cancel(stream.job_id)).state == "aborted"
            with pytest.raises(CancelledError) as e:
                async for _ in stream:
                    pass
            assert e.value.job_id == stream.job_id
            # Leaving a stream early cancels its job.
            other = client.stream("Count:", max_tokens=300, min_tokens=300)
            await other.__anext__()
            await other.aclose()
            deadline = time.monotonic() + 5
            while (await client.status(other.job_id)).state != "aborted":
                assert time.monotonic() < deadline, "the closed stream's job still runs"
                await asyncio.sleep(0.1)
            with pytest.raises(UnknownJobError):
                await client.cancel(987654321)
            return first

    assert asyncio.run(main()).index == 0
