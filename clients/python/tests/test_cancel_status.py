"""cancel and status on running jobs: a cancelled stream ends in
CancelledError, a stream closed early cancels its job, status follows a job."""
import threading
import time

import pytest

from troupe_client import CancelledError, Client, UnknownJobError

LONG = dict(max_tokens=300, min_tokens=300)


def wait_not_running(client, job_id, seconds=10):
    """The job's status once it no longer runs (or still running after `seconds`)."""
    deadline = time.monotonic() + seconds
    while True:
        status = client.status(job_id)
        if status.state not in ("running", "queued") or time.monotonic() > deadline:
            return status
        time.sleep(0.1)


def test_status_of_a_running_job_then_cancel_from_the_same_client(client):
    stream = client.stream("Count:", **LONG)
    first = [next(stream) for _ in range(3)]
    status = client.status(stream.job_id)
    assert status.job_id == stream.job_id and status.state == "running"
    cancelled = client.cancel(stream.job_id)
    assert cancelled.job_id == stream.job_id and cancelled.state == "aborted"
    assert isinstance(cancelled.error, CancelledError) and cancelled.tokens >= 3
    with pytest.raises(CancelledError) as e:
        for _ in stream:
            pass
    assert e.value.code == "CANCELLED" and e.value.job_id == stream.job_id
    assert f"job {stream.job_id} was cancelled" in e.value.text
    assert [t.index for t in first] == [0, 1, 2] and stream.result is None


def test_cancel_from_another_client_ends_the_streaming_consumer(cluster, client):
    job_id = 4242424242
    outcome = {}

    def consume():
        try:
            client.generate("Count:", job_id=job_id, **LONG)
            outcome["error"] = None
        except CancelledError as e:
            outcome["error"] = e

    t = threading.Thread(target=consume)
    t.start()
    with Client.from_cluster(cluster.dir) as other:
        deadline = time.monotonic() + 30
        while True:  # until the job runs (the client's job id is the head's)
            try:
                if other.status(job_id).state == "running":
                    break
            except UnknownJobError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert other.cancel(job_id).state == "aborted"
    t.join(60)
    assert isinstance(outcome.get("error"), CancelledError)
    assert outcome["error"].job_id == job_id


def test_closing_a_stream_early_cancels_its_job(client):
    stream = client.stream("Count:", **LONG)
    next(stream)
    job_id = stream.job_id
    stream.close()
    status = wait_not_running(client, job_id, 5)
    assert status.state == "aborted" and isinstance(status.error, CancelledError)


def test_cancel_of_an_unknown_job_is_unknown_job_error(client):
    with pytest.raises(UnknownJobError):
        client.cancel(987654321)
