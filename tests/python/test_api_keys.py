"""Keys on every client door, end to end against a real `troupe cluster up`
(http/access.h, http/key_store.h, transport/zap_handler.h):

* the HTTP API with `--api-key`, `--api-key-file` and `--admin-key-file`:
  401 without a key or with a wrong one (raw HTTP and the official openai
  client), 200 with one, SIGHUP and POST /admin/keys/reload re-read the file
  (a bad file keeps the old keys), admin routes need an admin key, and each
  per-key limit gives its error while another key keeps working;
* the job endpoint with `--job-curve`: the client key cluster up made works,
  an unlisted key and a node key are refused with UNAUTHENTICATED at once,
  and the client key opens no node link.
"""
import json
import os
import signal
import time

import pytest
import requests

from zmq.utils.monitor import recv_monitor_message

from test_cluster import Cluster, run, json_lines

openai = pytest.importorskip("openai")
zmq = pytest.importorskip("zmq")

ALICE = "sk-alice-0123456789"  # a user key, no limits
BOB = "sk-bob-0123456789"  # a user key with every limit but concurrency
DAVE = "sk-dave-0123456789"  # a user key, one job at a time
OPS = "sk-ops-0123456789"  # the admin key (admin key file)
FLAG = "sk-flag-0123456789"  # given with --api-key
KEYS = f"""# test keys
alice {ALICE}
bob {BOB} max_tokens=8 max_prompt_tokens=40 max_request_bytes=400
dave {DAVE} max_concurrent_jobs=1
"""


@pytest.fixture(scope="module")
def key_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    (d / "keys.txt").write_text(KEYS)
    (d / "admin.txt").write_text(f"ops {OPS}\n")
    return d


@pytest.fixture(scope="module")
def cluster(troupe_bin, model_path, key_files):
    c = Cluster(shards=1, extra=("--http-port", "0", "--api-key-file", key_files / "keys.txt",
                                 "--admin-key-file", key_files / "admin.txt", "--api-key", FLAG, "--job-curve"))
    yield c
    c.stop()


@pytest.fixture(scope="module")
def url(cluster):
    return f"http://127.0.0.1:{cluster.info['http_port']}"


def head_pid(cluster):
    return next(n["pid"] for n in cluster.info["nodes"] if n["id"] == "head")


def head_log(cluster):
    return (cluster.dir / "logs" / "head.log").read_text()


def post(url, path, key=None, body=None, **kw):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return requests.post(url + path, json=body if body is not None else {}, headers=headers, timeout=60, **kw)


def completion(url, key, **fields):
    body = {"prompt": "The capital of France is", "max_tokens": 4, "temperature": 0, **fields}
    return post(url, "/v1/completions", key, body)


def assert_error(r, status, code, *words):
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code, err
    for w in words:
        assert w in err["message"], (w, err)
    return err


def wait_until(check, timeout=10):
    deadline = time.time() + timeout
    while True:
        if check():
            return
        assert time.time() < deadline, "not within the time limit"
        time.sleep(0.1)


# ------------------------------------------------------------------ HTTP keys

def test_the_head_says_which_keys_it_requires(cluster):
    log = head_log(cluster)
    assert "HTTP API: keys required (5 key(s) (1 admin)" in log, log
    assert cluster.info["api_keys"] is True


def test_no_key_or_a_wrong_key_gets_401_and_a_right_key_200(url):
    for key in (None, "sk-wrong-0123456789"):
        err = assert_error(completion(url, key), 401, "invalid_api_key")
        assert err["type"] == "invalid_request_error"
        assert_error(requests.get(url + "/v1/models", headers={"Authorization": f"Bearer {key}"} if key else {}),
                     401, "invalid_api_key")
    assert_error(requests.get(url + "/metrics"), 401, "invalid_api_key")
    assert_error(completion(url, None, **{}), 401, "invalid_api_key", "Authorization")
    r = requests.get(url + "/v1/completions", headers={"Authorization": "Basic " + ALICE})
    assert r.status_code == 401
    for key in (ALICE, FLAG, OPS):  # a file key, a flag key, and an admin key (which may do what users do)
        r = completion(url, key)
        assert r.status_code == 200, r.text
        assert r.json()["usage"]["completion_tokens"] == 4
    assert requests.get(url + "/health").status_code == 200  # liveness stays open


def test_the_openai_client_gets_authentication_error_without_a_valid_key(url):
    bad = openai.OpenAI(base_url=url + "/v1", api_key="sk-wrong-0123456789", max_retries=0, timeout=60)
    with pytest.raises(openai.AuthenticationError) as e:
        bad.chat.completions.create(model="any", messages=[{"role": "user", "content": "Hi"}], max_tokens=2)
    assert e.value.status_code == 401
    assert e.value.code == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()
    good = openai.OpenAI(base_url=url + "/v1", api_key=ALICE, max_retries=0, timeout=60)
    r = good.chat.completions.create(model="any", messages=[{"role": "user", "content": "Hi"}], max_tokens=3,
                                     temperature=0)
    assert r.usage.completion_tokens >= 1
    assert [m.id for m in good.models.list()]


def test_sighup_rereads_the_key_file_and_a_bad_file_keeps_the_old_keys(cluster, url, key_files):
    path = key_files / "keys.txt"
    carol = "sk-carol-0123456789"
    try:
        path.write_text(KEYS.replace(f"alice {ALICE}", f"carol {carol}"))
        os.kill(head_pid(cluster), signal.SIGHUP)
        wait_until(lambda: completion(url, carol).status_code == 200)
        assert_error(completion(url, ALICE), 401, "invalid_api_key")  # removed
        assert completion(url, FLAG).status_code == 200  # the flag keys stay
        # A bad file: logged, and the keys in force stay.
        path.write_text(KEYS + "erin sk-erin-0123456789 max_tokens=lots\n")
        os.kill(head_pid(cluster), signal.SIGHUP)
        wait_until(lambda: "SIGHUP: keys not reloaded" in head_log(cluster))
        assert "keys.txt:5: max_tokens: expected an integer >= 1, got 'lots'" in head_log(cluster)
        assert completion(url, carol).status_code == 200
        assert completion(url, "sk-erin-0123456789").status_code == 401
    finally:
        path.write_text(KEYS)
        os.kill(head_pid(cluster), signal.SIGHUP)
        wait_until(lambda: completion(url, ALICE).status_code == 200)


def test_admin_routes_need_the_admin_key(url, key_files):
    assert_error(post(url, "/admin/keys/reload", ALICE), 403, "admin_key_required", "admin key")
    assert_error(post(url, "/admin/keys/reload"), 401, "invalid_api_key")
    r = post(url, "/admin/keys/reload", OPS)
    assert r.status_code == 200, r.text
    assert r.json() == {"reloaded": True, "keys": 5, "admin_keys": 1}
    path = key_files / "keys.txt"
    try:
        path.write_text(KEYS + "frank short\n")
        err = assert_error(post(url, "/admin/keys/reload", OPS), 400, "invalid_key_file", "keys.txt:5",
                           "the old ones stay")
        assert "8 to 512 characters" in err["message"]
        assert completion(url, ALICE).status_code == 200
        path.write_text(KEYS + f"frank sk-frank-0123456789\n")
        r = post(url, "/admin/keys/reload", OPS)
        assert r.status_code == 200 and r.json()["keys"] == 6
        assert completion(url, "sk-frank-0123456789").status_code == 200
    finally:
        path.write_text(KEYS)
        assert post(url, "/admin/keys/reload", OPS).status_code == 200


def test_each_limit_names_itself_while_other_keys_keep_working(url):
    err = assert_error(completion(url, BOB, max_tokens=9), 400, "limit_exceeded", "key 'bob'", "max_tokens is 8")
    assert err["param"] == "max_tokens"
    assert completion(url, ALICE, max_tokens=9).status_code == 200
    r = completion(url, BOB, max_tokens=8)
    assert r.status_code == 200, r.text
    # Without max_tokens a chat's default (1024) becomes the key's limit.
    r = post(url, "/v1/chat/completions", BOB, {"messages": [{"role": "user", "content": "Count to fifty."}],
                                                "temperature": 0, "min_tokens": 20})
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["completion_tokens"] == 8

    long_prompt = "1234567890" * 5  # one token per digit: 50 tokens in a small body
    err = assert_error(completion(url, BOB, prompt=long_prompt), 400, "limit_exceeded", "max_prompt_tokens is 40",
                       "the prompt has")
    assert err["param"] == "max_prompt_tokens"
    assert completion(url, ALICE, prompt=long_prompt).status_code == 200

    padded = {"user": "x" * 500}  # an OpenAI field the API ignores: only the size counts
    err = assert_error(completion(url, BOB, **padded), 413, "limit_exceeded", "max_request_bytes is 400")
    assert err["param"] == "max_request_bytes"
    assert completion(url, ALICE, **padded).status_code == 200


def test_a_key_at_its_concurrency_limit_gets_429_while_another_key_runs(url):
    body = {"prompt": "Once upon a time", "max_tokens": 400, "min_tokens": 400, "temperature": 0, "stream": True}
    held = requests.post(url + "/v1/completions", json=body, headers={"Authorization": f"Bearer {DAVE}"},
                         stream=True, timeout=60)
    try:
        assert held.status_code == 200
        lines = held.iter_lines()
        first = next(l for l in lines if l)
        assert first.startswith(b"data: ")
        err = assert_error(completion(url, DAVE), 429, "limit_exceeded", "key 'dave'", "max_concurrent_jobs is 1")
        assert err["type"] == "rate_limit_error"
        assert completion(url, ALICE).status_code == 200  # another key is not held up
    finally:
        held.close()  # the client leaves: its job is cancelled and the key's slot freed
    wait_until(lambda: completion(url, DAVE).status_code == 200, timeout=30)


def test_admin_job_routes_show_and_cancel_any_job(cluster, url):
    # A job submitted on the job endpoint, seen and cancelled over HTTP with the admin key.
    import subprocess
    from test_cluster import TROUPE_BIN
    job = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", cluster.endpoint, "--prompt", "Count:",
                            "--max-tokens", "2000", "--min-tokens", "2000", "--json", "--job-id", "4242",
                            "--server-key", cluster.info["server_key"], "--client-key",
                            cluster.info["client_key_file"]],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert job.stdout.readline().startswith("{")  # running
        headers = {"Authorization": f"Bearer {OPS}"}
        r = requests.get(url + "/admin/jobs/4242", headers=headers, timeout=60)
        assert r.status_code == 200 and r.json()["state"] == "running" and r.json()["tokens"] >= 1, r.text
        assert_error(post(url, "/admin/jobs/4242/cancel", ALICE), 403, "admin_key_required")
        r = post(url, "/admin/jobs/4242/cancel", OPS)
        assert r.status_code == 200, r.text
        assert r.json()["state"] == "aborted" and r.json()["error"]["code"] == "CANCELLED", r.json()
        _, err = job.communicate(timeout=30)
        assert job.returncode == 1 and "CANCELLED" in err, err
        assert_error(requests.get(url + "/admin/jobs/999999", headers=headers, timeout=60), 404, "unknown_job",
                     "no job 999999")
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()


# ------------------------------------------------------------------ the job endpoint

def submit(cluster, *flags, timeout=60):
    return run("submit", "--endpoint", cluster.endpoint, "--prompt", "Hello there", "--max-tokens", "4", "--json",
               "--server-key", cluster.info["server_key"], *flags, timeout=timeout)


def test_the_job_endpoint_takes_the_allowlisted_client_key(cluster):
    assert cluster.info["job_curve"] is True
    assert cluster.info["client_key_file"] == str(cluster.dir / "keys" / "client" / "node.key")
    p = submit(cluster, "--client-key", cluster.info["client_key_file"])
    assert p.returncode == 0, p.stderr
    assert json_lines(p.stdout)[-1]["generated_tokens"] == 4
    # The head's own HTTP API is a client of the same CURVE job endpoint (above it answered).
    assert "job endpoint: CURVE, clients from" in head_log(cluster)


def test_the_server_key_may_be_given_as_the_heads_pub_file(cluster):
    p = run("submit", "--endpoint", cluster.endpoint, "--prompt", "Hello there", "--max-tokens", "4", "--json",
            "--server-key", cluster.info["server_key_file"], "--client-key", cluster.info["client_key_file"])
    assert p.returncode == 0, p.stderr
    bad = run("submit", "--endpoint", cluster.endpoint, "--prompt", "Hi", "--server-key", "no-such-key")
    assert bad.returncode == 1 and "'no-such-key' is neither" in bad.stderr, bad.stderr


@pytest.mark.parametrize("which", ["fresh", "node"])
def test_the_job_endpoint_refuses_unlisted_keys_at_once(cluster, which):
    # A fresh key pair (no --client-key), or a node's key: not in the client allowlist.
    flags = () if which == "fresh" else ("--client-key", cluster.dir / "keys" / "shard-0" / "node.key")
    start = time.time()
    p = submit(cluster, *flags, "--timeout", "30")
    assert p.returncode != 0
    assert "UNAUTHENTICATED" in p.stderr and "client allowlist" in p.stderr, p.stderr
    assert time.time() - start < 8, "a refused key must be told, not left to time out"


def test_the_client_key_opens_no_node_link(cluster):
    """The client key is in the job endpoint's allowlist only: a shard's node
    endpoint refuses it (ZAP), while the same handshake with a node key passes."""
    shard = next(n for n in cluster.info["nodes"] if n["role"] == "shard")

    def key(path, name):
        line = next(l for l in path.read_text().splitlines() if l.startswith(name))
        return line.split("=", 1)[1].strip()

    shard_pub = key(cluster.dir / "keys" / "shard-0" / "node.pub", "public-key")

    def handshake(key_dir):
        secret = key(key_dir / "node.key", "secret-key")
        public = key(key_dir / "node.key", "public-key")
        ctx = zmq.Context()
        s = ctx.socket(zmq.DEALER)
        s.curve_serverkey, s.curve_publickey, s.curve_secretkey = shard_pub.encode(), public.encode(), secret.encode()
        s.linger = 0
        mon = s.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
        s.connect(shard["endpoints"]["nodes"])
        try:
            if not mon.poll(5000):
                return None
            return recv_monitor_message(mon)["event"]
        finally:
            s.disable_monitor()
            mon.close()
            s.close()
            ctx.term()

    assert handshake(cluster.dir / "keys" / "client") == zmq.EVENT_HANDSHAKE_FAILED_AUTH
    assert handshake(cluster.dir / "keys" / "head") == zmq.EVENT_HANDSHAKE_SUCCEEDED


def test_without_keys_the_api_is_open_says_so_and_admin_routes_stay_shut(troupe_bin, model_path):
    c = Cluster(shards=1, extra=("--http-port", "0"))
    try:
        assert "HTTP API: OPEN, no API keys configured" in head_log(c)
        assert "job endpoint: plain (loopback)" in head_log(c)
        assert c.info["api_keys"] is False and c.info["job_curve"] is False
        url = f"http://127.0.0.1:{c.info['http_port']}"
        assert completion(url, None).status_code == 200
        assert completion(url, "sk-anything-at-all").status_code == 200
        assert_error(post(url, "/admin/keys/reload", "sk-anything-at-all"), 403, "admin_key_required",
                     "has none configured")
        # The plain job endpoint on loopback takes any client, as before.
        p = run("submit", "--endpoint", c.endpoint, "--prompt", "Hi", "--max-tokens", "2", timeout=60)
        assert p.returncode == 0, p.stderr
    finally:
        c.stop()
