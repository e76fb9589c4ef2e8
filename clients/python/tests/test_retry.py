"""Automatic retry with the same job id: a connection cut mid-answer costs
the caller nothing — the SDK re-sends the job (same id), skips the tokens it
has given already (checking the replay against them) and the stream goes on
to exactly the answer of an undisturbed run."""
import asyncio

import pytest

from tcp_proxy import TcpProxy

from troupe_client import AsyncClient, Client, UnavailableError

JOB = dict(temperature=0.8, seed=77, max_tokens=60, min_tokens=60)


@pytest.fixture
def proxy(cluster):
    p = TcpProxy(cluster.endpoint)
    yield p
    p.close()


def test_a_cut_connection_is_retried_with_the_same_job_id(cluster, client, proxy):
    reference = client.generate("Tell me a story.", **JOB)
    job_id = 0x5EED_0000_0001
    prefilled = client.metrics().counters["head/prompt_tokens_prefilled_total"]
    with Client(proxy.endpoint, timeout=10, idle_timeout=60) as c:
        stream = c.stream("Tell me a story.", job_id=job_id, **JOB)
        got = [next(stream) for _ in range(10)]
        proxy.cut()
        got += list(stream)
    result = stream.result
    assert proxy.connections >= 2  # it did reconnect
    assert [t.index for t in got] == list(range(60))  # each token once, in order
    assert [t.token_id for t in got] == reference.tokens == result.tokens
    assert result.text == reference.text
    assert stream._run.attempts == 2  # one re-send: the old connection's late events did not count twice
    # The re-sent id followed the same job: it ran once (one prefill), and is completed.
    after = client.metrics().counters["head/prompt_tokens_prefilled_total"]
    assert after - prefilled == result.usage.prompt_tokens - result.usage.cached_tokens
    assert client.status(job_id).state == "completed" and result.job_id == job_id


def test_async_stream_survives_a_cut_too(cluster, client, proxy):
    reference = client.generate("Tell me a story.", **JOB)

    async def main():
        async with AsyncClient(proxy.endpoint, timeout=10, idle_timeout=60) as c:
            stream = c.stream("Tell me a story.", **JOB)
            got = []
            async for t in stream:
                got.append(t)
                if len(got) == 5:
                    proxy.cut()
            return got, stream.result

    got, result = asyncio.run(main())
    assert [t.index for t in got] == list(range(60))
    assert result.tokens == reference.tokens and proxy.connections >= 2


def test_without_retries_a_cut_is_an_unavailable_error(cluster, proxy):
    with Client(proxy.endpoint, timeout=10, idle_timeout=60, retries=0) as c:
        stream = c.stream("Tell me a story.", **JOB)
        next(stream)
        proxy.cut()
        with pytest.raises(UnavailableError, match="lost the connection") as e:
            list(stream)
        assert e.value.retryable


def test_a_silent_connection_is_noticed_by_heartbeats_and_retried(cluster, client, proxy):
    # No FIN, no RST: the link just goes quiet. ZMTP heartbeats drop it
    # within 10 s, and the job goes on over a new connection.
    reference = client.generate("Tell me a story.", **JOB)
    with Client(proxy.endpoint, timeout=10, idle_timeout=60) as c:
        stream = c.stream("Tell me a story.", **JOB)
        got = [next(stream) for _ in range(10)]
        proxy.stall()
        got += list(stream)
    assert [t.index for t in got] == list(range(60))
    assert [t.token_id for t in got] == reference.tokens and proxy.connections >= 2
