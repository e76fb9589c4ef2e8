"""What the durable queue on the head gives the SDK (issue 9, item 1):
idempotent job ids (the same id answers with the existing job's stream, never
a second run), JobAttach, JobStatus with tokens, priority and the final state
kept after the end, and a stream that rides through a head restart."""
import asyncio
import json
import os
import signal
import threading
import time

import pytest

from conftest import Cluster, generate_lines, token_ids

from troupe_client import AsyncClient, CancelledError, Client, UnknownJobError

JOB = dict(temperature=0.8, seed=5, max_tokens=40, min_tokens=40)


def test_status_after_the_end_says_completed_with_its_tokens_and_priority(client):
    result = client.generate("Tell me a story.", priority=3, **JOB)
    status = client.status(result.job_id)
    assert status.state == "completed" and status.finish_reason == result.finish_reason
    assert status.tokens == result.usage.completion_tokens and status.priority == 3


def test_a_cancelled_job_is_aborted_with_its_error(client):
    stream = client.stream("Count:", max_tokens=300, min_tokens=300)
    next(stream)
    client.cancel(stream.job_id)
    with pytest.raises(CancelledError):
        list(stream)
    status = client.status(stream.job_id)
    assert status.state == "aborted" and isinstance(status.error, CancelledError)
    assert status.tokens >= 1


def test_status_of_a_running_job_counts_its_tokens(client):
    stream = client.stream("Count:", max_tokens=200, min_tokens=200)
    seen = [next(stream) for _ in range(20)]
    status = client.status(stream.job_id)
    assert status.state == "running" and status.tokens >= len(seen)
    stream.close()


def test_attach_replays_a_finished_job_from_any_index(client):
    result = client.generate("Tell me a story.", **JOB)
    whole = client.attach(result.job_id)
    tokens = list(whole)
    assert [t.index for t in tokens] == list(range(len(tokens)))
    assert whole.result.tokens == result.tokens and whole.result.text == result.text
    tail = client.attach(result.job_id, from_index=25)
    rest = list(tail)
    assert [t.index for t in rest] == list(range(25, len(tokens)))
    assert [t.token_id for t in rest] == [t.token_id for t in tokens[25:]]
    with pytest.raises(UnknownJobError):
        list(client.attach(0x7FFF_FFFF_FFFF_FFF0))


def test_attach_to_a_running_job_from_another_client(cluster, client):
    job_id = 0x4A77_AC4E
    outcome = {}
    t = threading.Thread(target=lambda: outcome.setdefault("r", client.generate("Tell me a story.", job_id=job_id,
                                                                                  **JOB)))
    t.start()
    with Client.from_cluster(cluster.dir) as watcher:
        deadline = time.monotonic() + 30
        while True:
            try:
                watcher.status(job_id)
                break
            except UnknownJobError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        watched = watcher.attach(job_id).collect()
    t.join(60)
    assert watched.tokens == outcome["r"].tokens and watched.text == outcome["r"].text


def test_the_same_job_id_answers_with_the_existing_job_never_a_second_run(client):
    job_id = 0x1D_E4_90_7E_17
    first = client.generate("Tell me a story.", job_id=job_id, **JOB)
    prefilled = client.metrics().counters["head/prompt_tokens_prefilled_total"]
    again = client.generate("Tell me a story.", job_id=job_id, **JOB)
    assert again.tokens == first.tokens and again.job_id == job_id
    assert client.metrics().counters["head/prompt_tokens_prefilled_total"] == prefilled  # nothing ran
    with pytest.raises(Exception) as e:  # the same id for another job
        client.generate("Another prompt entirely.", job_id=job_id, **JOB)
    assert e.value.code == "BAD_REQUEST" and str(job_id) in e.value.text


def _kill_head_and_wait_for_its_restart(c):
    head_pid = c.info["nodes"][0]["pid"]
    os.kill(head_pid, signal.SIGKILL)
    deadline = time.time() + 120
    while json.loads((c.dir / "cluster.json").read_text())["nodes"][0]["pid"] == head_pid:
        assert time.time() < deadline, c.stderr()
        time.sleep(0.1)


def test_a_stream_rides_through_a_head_killed_and_restarted(troupe_bin, model_path):
    """The head SIGKILLed mid-answer; cluster up starts it again and its
    journal runs the job again. The SDK sees the connection go, re-sends the
    job with its id once the head is back, skips what it has given, and the
    caller gets exactly the undisturbed answer — sync and async."""
    flags = ("--temperature", "0.8", "--seed", "11", "--max-tokens", "64", "--min-tokens", "64")
    options = dict(temperature=0.8, seed=11, max_tokens=64, min_tokens=64)
    want = token_ids(generate_lines("Tell me a story.", *flags))
    c = Cluster(shards=2)
    try:
        with Client.from_cluster(c.dir, timeout=60, idle_timeout=60) as client:
            stream = client.stream("Tell me a story.", **options)
            got = [next(stream) for _ in range(10)]
            _kill_head_and_wait_for_its_restart(c)
            got += list(stream)
        assert [t.index for t in got] == list(range(64))
        assert [t.token_id for t in got] == want == stream.result.tokens
        assert stream._run.attempts >= 2
        c.info = json.loads((c.dir / "cluster.json").read_text())

        async def main():
            async with AsyncClient.from_cluster(c.dir, timeout=60, idle_timeout=60) as a:
                s = a.stream("Tell me a story.", **options)
                tokens = []
                async for t in s:
                    tokens.append(t)
                    if len(tokens) == 10:
                        await asyncio.get_running_loop().run_in_executor(None, _kill_head_and_wait_for_its_restart, c)
                return tokens, s.result

        tokens, result = asyncio.run(main())
        assert [t.index for t in tokens] == list(range(64)) and result.tokens == want
    finally:
        c.stop()
