"""The head's durable job queue, end to end on real clusters (`troupe cluster
up`, real processes, the real model): jobs are journaled before they are
accepted, a repeated job id never runs twice, a full queue answers BUSY, and a
head killed with SIGKILL comes back (cluster up starts it again) and runs every
accepted job again with exactly the tokens of an undisturbed run, which each
job's own `troupe submit` follows through the restart and `troupe submit
--attach` then replays from the first token.
"""
import concurrent.futures
import json
import os
import pathlib
import signal
import subprocess
import time

import requests

from test_cluster import Cluster, TROUPE_BIN, generate, json_lines, run, tokens


def head_counter(cluster, name):
    p = run("status", "--endpoint", cluster.endpoint, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["nodes"]["head"][name]


def job_status(cluster, job_id):
    p = run("job", "status", "--endpoint", cluster.endpoint, job_id, "--json")
    return json.loads(p.stdout) if p.returncode == 0 else {"error": p.stderr}


def attach(cluster, job_id, *flags):
    p = run("submit", "--endpoint", cluster.endpoint, "--attach", job_id, "--json", *flags, timeout=600)
    assert p.returncode == 0, p.stderr
    return json_lines(p.stdout)


def test_a_repeated_job_id_follows_the_same_job_and_another_job_is_refused(troupe_bin, model_path):
    c = Cluster(shards=2)
    try:
        flags = ("--max-tokens", "12", "--temperature", "0.9", "--seed", "5", "--job-id", "900")
        first = run("submit", "--endpoint", c.endpoint, "--prompt", "Tell me a joke 😀", "--json", *flags)
        assert first.returncode == 0, first.stderr
        accepted = head_counter(c, "jobs_accepted_total")
        again = run("submit", "--endpoint", c.endpoint, "--prompt", "Tell me a joke 😀", "--json", *flags)
        assert again.returncode == 0, again.stderr
        assert tokens(json_lines(again.stdout)) == tokens(json_lines(first.stdout))
        assert json_lines(again.stdout)[-1]["job_id"] == 900
        assert head_counter(c, "jobs_accepted_total") == accepted, "a repeated job id ran the job twice"
        assert head_counter(c, "jobs_repeated_total") == 1
        # The same id for another job: refused, naming the id.
        other = run("submit", "--endpoint", c.endpoint, "--prompt", "Something else", "--job-id", "900")
        assert other.returncode == 1 and "job id 900 names another job" in other.stderr, other.stderr
        # Attach from a token index replays the rest.
        tail = attach(c, 900, "--from-index", "5")
        assert tokens(tail) == tokens(json_lines(first.stdout))[5:]
        status = job_status(c, 900)
        # Every token the job streamed: the answer's, and the end marker when it ended on eos (on an AVX2-only
        # CPU the rounding differs from AVX-512's, and this sampled answer ends there after 10 tokens).
        done = json_lines(first.stdout)[-1]
        streamed = len(tokens(json_lines(first.stdout))) + (1 if done["finish_reason"] == "eos" else 0)
        assert done["finish_reason"] in ("eos", "length") and streamed <= 12
        assert status["state"] == "completed" and status["tokens"] == streamed, status
        assert status["finish_reason"] == done["finish_reason"], status
        unknown = run("job", "status", "--endpoint", c.endpoint, "901")
        assert unknown.returncode == 1 and "UNKNOWN_JOB" in unknown.stderr
    finally:
        c.stop()


def test_sixty_four_jobs_into_a_queue_of_sixteen_each_complete_or_busy(troupe_bin, model_path):
    # A cache that holds a couple of jobs at once and a queue of 16: of 64
    # jobs sent at once each completes or is refused BUSY; none is lost, none
    # runs twice; a refused job's retry with the same id runs it.
    c = Cluster(shards=1, extra=("--cache-budget-mb", "3", "--max-queued-jobs", "16"))
    try:
        before = head_counter(c, "jobs_accepted_total")

        def one(i):
            return run("submit", "--endpoint", c.endpoint, "--prompt", f"Count to {i}:", "--max-tokens", "8",
                       "--min-tokens", "8", "--json", "--job-id", 5000 + i, "--timeout", "600", timeout=900)

        with concurrent.futures.ThreadPoolExecutor(64) as pool:
            results = list(pool.map(one, range(64)))
        done = [i for i, p in enumerate(results) if p.returncode == 0]
        busy = [i for i, p in enumerate(results) if p.returncode != 0]
        for i in busy:
            assert "BUSY: the head's queue is full" in results[i].stderr, results[i].stderr
        for i in done:
            assert json_lines(results[i].stdout)[-1]["generated_tokens"] == 8
        assert busy, "a queue of 16 took 64 jobs at once"
        assert len(done) >= 16
        assert head_counter(c, "jobs_accepted_total") - before == len(done), "accepted jobs and answers differ"
        # A refused job was not accepted: its id is free, its retry runs it.
        retry = one(busy[0])
        assert retry.returncode == 0, retry.stderr
        assert head_counter(c, "jobs_accepted_total") - before == len(done) + 1
        # An accepted job's retry runs nothing: the same answer.
        again = one(done[0])
        assert tokens(json_lines(again.stdout)) == tokens(json_lines(results[done[0]].stdout))
        assert head_counter(c, "jobs_accepted_total") - before == len(done) + 1
    finally:
        c.stop()


PROMPTS = ["Write a short poem about the sea.", "Name three fruits:", "Explain gravity to a child.",
           "What is 2 + 2?", "Describe a cat in one sentence.", "List the planets:",
           "Why is the sky blue? ☀️", "Tell a story about a dragon."]


def test_a_head_killed_mid_answer_runs_every_accepted_job_again_with_the_same_tokens(troupe_bin, model_path):
    # A cache that holds about two of these jobs: of 8, some run and some
    # wait when the head is SIGKILLed (one may have ended: its record must
    # survive as well). cluster up starts it again; its journal
    # brings all 8 back; each ends with exactly the tokens of the single
    # process, replayed whole by --attach.
    flags = lambda i: ("--max-tokens", "160", "--min-tokens", "160", "--temperature", "0.8", "--seed", str(100 + i))
    want = {i: tokens(generate(PROMPTS[i], *flags(i))) for i in range(8)}
    c = Cluster(shards=2, extra=("--cache-budget-mb", "2"))
    try:
        clients = [subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, "--prompt", PROMPTS[i],
                                     "--json", "--job-id", str(8000 + i), *flags(i)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(8)]
        # Every job accepted (journaled), at least one answering, some waiting:
        # the states of all 8 from one look (the console's job list), so that
        # none can move on between the look and the kill (eight `job status`
        # calls took over a second, in which a queued job could run to its end).
        deadline = time.time() + 60
        jobs_url = f"http://127.0.0.1:{c.info['http_port']}/api/v1/jobs"
        while True:
            listed = {j["job_id"]: j for j in requests.get(jobs_url, timeout=10).json()["jobs"]}
            statuses = [listed.get(str(8000 + i), {}) for i in range(8)]
            if all("state" in s for s in statuses) and any(s.get("tokens", 0) > 0 for s in statuses):
                break
            assert time.time() < deadline, statuses
        states = [s["state"] for s in statuses]
        assert "queued" in states, states  # (one that completed already must survive too)
        head_pid = c.info["nodes"][0]["pid"]
        os.kill(head_pid, signal.SIGKILL)
        # cluster up starts the head again on the same endpoints.
        deadline = time.time() + 120
        while True:
            info = json.loads((c.dir / "cluster.json").read_text())
            if info["nodes"][0]["pid"] != head_pid:
                break
            assert time.time() < deadline, c.stderr()
            time.sleep(0.2)
        assert "starting it again" in c.stderr()
        # Each client saw its link drop and come back, and followed its job on
        # the new head (from the token it had got to): every answer whole.
        for i, p in enumerate(clients):
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, f"job {8000 + i}: {err}"
            assert tokens(json_lines(out)) == want[i], f"job {8000 + i}'s own client"
        for i in range(8):
            lines = attach(c, 8000 + i)
            assert tokens(lines) == want[i], f"job {8000 + i}"
            assert lines[-1]["generated_tokens"] == 160
            assert job_status(c, 8000 + i)["state"] == "completed"
        # Those not ended when the head died ran again.
        assert 8 - states.count("completed") >= head_counter(c, "jobs_recovered_total") >= states.count("queued")
    finally:
        c.stop()


def test_sigterm_on_the_head_finishes_running_jobs_refuses_new_ones_and_keeps_queued_ones(troupe_bin, model_path):
    # A cache that holds the long job but not the short one beside it: the
    # long one runs, the short one waits. SIGTERM to the head: the long job
    # ends with every token of an undisturbed run, a new job (job endpoint or
    # HTTP) is refused naming the shutdown, the head leaves once the long job
    # is done, and the queued job runs when cluster up starts the head again.
    long_flags = ("--max-tokens", "640", "--min-tokens", "640", "--temperature", "0.8", "--seed", "31")
    short_flags = ("--max-tokens", "160", "--min-tokens", "160", "--temperature", "0.8", "--seed", "32")
    want_long = tokens(generate(PROMPTS[0], *long_flags))
    want_short = tokens(generate(PROMPTS[1], *short_flags))
    c = Cluster(shards=2, extra=("--cache-budget-mb", "8"))
    try:
        jobs_url = f"http://127.0.0.1:{c.info['http_port']}/api/v1/jobs"

        def state(job_id):
            listed = {j["job_id"]: j for j in requests.get(jobs_url, timeout=10).json()["jobs"]}
            return listed.get(str(job_id), {})

        def wait_for(job_id, predicate, what):
            deadline = time.time() + 60
            while not predicate(state(job_id)):
                assert time.time() < deadline, f"job {job_id} never {what}: {state(job_id)}"
                time.sleep(0.05)

        long_job = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, "--prompt", PROMPTS[0],
                                     "--json", "--job-id", "9100", *long_flags],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(9100, lambda s: s.get("tokens", 0) > 0, "answered")
        short_job = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, "--prompt", PROMPTS[1],
                                      "--json", "--job-id", "9101", *short_flags],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(9101, lambda s: s.get("state") == "queued", "queued")
        assert state(9100).get("state") == "running", state(9100)
        head_pid = c.info["nodes"][0]["pid"]
        os.kill(head_pid, signal.SIGTERM)
        head_log = pathlib.Path(c.info["nodes"][0]["log"])
        deadline = time.time() + 30
        while "SIGTERM: closing" not in head_log.read_text(errors="replace"):
            assert time.time() < deadline, head_log.read_text(errors="replace")[-2000:]
            time.sleep(0.05)
        # Closing: new jobs are refused, by the job endpoint and by HTTP.
        refused = run("submit", "--endpoint", c.endpoint, "--prompt", "Hello", "--max-tokens", "4", "--json")
        assert refused.returncode == 1 and "the head is shutting down" in refused.stderr, refused.stderr
        http = requests.post(f"http://127.0.0.1:{c.info['http_port']}/v1/completions", timeout=30,
                             json={"model": "smollm2", "prompt": "Hello", "max_tokens": 4})
        assert http.status_code == 503, (http.status_code, http.text)
        assert "shutting down" in http.json()["error"]["message"], http.text
        assert state(9100).get("state") == "running", "the long job ended before the refusals were checked"
        # The running job finishes, whole and right.
        out, err = long_job.communicate(timeout=120)
        assert long_job.returncode == 0, err
        assert tokens(json_lines(out)) == want_long
        assert json_lines(out)[-1]["generated_tokens"] == 640
        # Then the head leaves by itself, and cluster up starts it again.
        deadline = time.time() + 60
        while json.loads((c.dir / "cluster.json").read_text())["nodes"][0]["pid"] == head_pid:
            assert time.time() < deadline, c.stderr()[-2000:]
            time.sleep(0.1)
        log = head_log.read_text(errors="replace")
        assert "closed: no running job left; leaving" in log, log[-3000:]
        # The queued job waited in the journal: it runs on the new head with its
        # tokens, and its client, told the head stops (UNAVAILABLE, retryable),
        # follows it there by itself.
        out, err = short_job.communicate(timeout=120)
        assert short_job.returncode == 0, err
        assert tokens(json_lines(out)) == want_short
        lines = attach(c, 9101)
        assert tokens(lines) == want_short
        assert head_counter(c, "jobs_recovered_total") == 1
    finally:
        c.stop()
