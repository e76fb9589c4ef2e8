"""What the durable queue on the head gives the SDK (issue 9, item 1):
idempotent job ids (the same id answers with the existing job's stream, never
a second run), JobAttach, JobStatus with tokens, priority and the final state
kept after the end."""
import threading
import time

import pytest

from troupe_client import CancelledError, Client, UnknownJobError

pytestmark = pytest.mark.skip(
    reason="needs the head's durable queue (issue 9 item 1: idempotent job ids, JobAttach, JobStatus "
    "tokens/priority/JOB_COMPLETED/JOB_ABORTED), not yet on main")

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
