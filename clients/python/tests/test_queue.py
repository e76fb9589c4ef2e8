"""A head whose shard holds one long job at a time: the next jobs wait in the
queue (JOB_QUEUED notices through on_status), past --max-queued-jobs a job
gets BusyError with the queue depth and a retry hint; with priorities the
higher waiting job goes first."""
import threading
import time

import pytest

from conftest import Cluster

from troupe_client import BusyError, CancelledError, Client

LONG = dict(max_tokens=300, min_tokens=300)


@pytest.fixture(scope="module")
def small(troupe_bin, model_path):
    c = Cluster(shards=1, extra=("--cache-budget-mb", "10", "--max-queued-jobs", "2"))
    yield c
    c.stop()


def _start(client, results, key, **options):
    def run():
        try:
            results[key] = client.generate("Count:", **LONG, **options)
        except Exception as e:  # the test reads it
            results[key] = e

    t = threading.Thread(target=run)
    t.start()
    return t


def _error_of(f):
    try:
        f()
    except Exception as e:
        return e
    return None


def _wait_for(predicate, seconds=60):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_queued_notices_then_busy_with_depth_and_retry_hint(small):
    with Client.from_cluster(small.dir) as client:
        results, notices = {}, []
        running = client.stream("Count:", **LONG)
        next(running)  # it holds the shard's cache now
        waiting = client.stream("Count:", on_status=notices.append, **LONG)
        t = threading.Thread(target=lambda: results.setdefault("waiting", waiting.collect()))
        t.start()
        _wait_for(lambda: any(n.state == "queued" for n in notices))
        queued = [n for n in notices if n.state == "queued"][0]
        assert queued.job_id == waiting.job_id and queued.queue_position == 0
        assert client.status(waiting.job_id).state == "queued"
        second = client.stream("Count:", **LONG)
        t2 = threading.Thread(target=lambda: results.setdefault("second", _error_of(second.collect)))
        t2.start()
        _wait_for(lambda: second.status is not None)
        with pytest.raises(BusyError) as e:
            client.generate("Count:", **LONG)
        assert e.value.code == "BUSY" and e.value.retryable
        assert e.value.queue_depth == 2 and e.value.retry_after > 0
        assert "queue is full" in e.value.text
        # The running job ends (cancelled, to keep the test short): the first
        # waiting job gets its cache and runs to the end; the other is cancelled.
        running.close()
        _wait_for(lambda: client.status(waiting.job_id).state == "running")
        client.cancel(second.job_id)
        t.join(300)
        t2.join(300)
        assert results["waiting"].usage.completion_tokens == 300
        assert results["waiting"].timings.queue_seconds > 0
        assert isinstance(results["second"], CancelledError)


def test_a_higher_priority_job_overtakes_the_queue(small):
    with Client.from_cluster(small.dir) as client:
        results = {}
        running = client.stream("Count:", **LONG)
        next(running)
        low = _start(client, results, "low", job_id=0x10, priority=0)
        _wait_for(lambda: client.status(0x10).state == "queued" if _known(client, 0x10) else False)
        high = _start(client, results, "high", job_id=0x20, priority=5)
        # Accepted, then refused for cache on its first open round: queued.
        _wait_for(lambda: client.status(0x20).state == "queued" if _known(client, 0x20) else False)
        assert client.status(0x20).queue_position == 0 and client.status(0x10).queue_position == 1
        assert client.status(0x20).priority == 5
        running.collect()
        low.join(300)
        high.join(300)
        assert results["high"].timings.queue_seconds < results["low"].timings.queue_seconds


def _known(client, job_id):
    try:
        client.status(job_id)
        return True
    except Exception:
        return False
