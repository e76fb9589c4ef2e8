"""CURVE on the job endpoint: `Client.from_cluster` on a `cluster up`
directory (CURVE node links; its loopback job endpoint is plain, as the head
binds it), and on nodes whose job endpoint is on a non-loopback address —
CURVE, where the head's allowlist decides who may talk to it."""
import json
import signal
import socket
import subprocess
import time

import pytest

from conftest import DEFAULT_MODEL, TROUPE_BIN, generate_lines, run, token_ids

from troupe_client import AuthenticationError, Client


def test_from_cluster_on_a_curve_cluster_up(cluster):
    assert cluster.info["curve"] is True  # cluster up's default: CURVE node links
    with Client.from_cluster(cluster.dir) as client:
        assert client.endpoint == cluster.info["job_endpoint"]
        assert client.curve is False  # the job endpoint is loopback: plain, as the head binds it
        assert client.generate("Hello there", max_tokens=6).tokens == token_ids(generate_lines("Hello there", "--max-tokens", "6"))


def _non_loopback_ip():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))  # no packet is sent; picks the outgoing interface
        ip = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if ip.startswith("127.") else ip


@pytest.fixture(scope="module")
def curve_cluster(tmp_path_factory, troupe_bin, model_path):
    """A head and one shard from hand-written node configs, laid out as
    `cluster up --dir` lays out its directory (keys/<id>/node.key,
    keys/allowlist/*.pub, cluster.json), the job endpoint on a non-loopback
    address: CURVE. No client key pair: a client uses the head's own key,
    which a head always allows on its job endpoint."""
    ip = _non_loopback_ip()
    if ip is None:
        pytest.skip("this machine has no non-loopback address")
    d = tmp_path_factory.mktemp("curve-cluster")
    keys = {}
    (d / "keys" / "allowlist").mkdir(parents=True)
    for node in ("head", "shard-0", "stranger"):
        p = run("keys", "generate", "--out", d / "keys" / node)
        assert p.returncode == 0, p.stderr
        keys[node] = (d / "keys" / node / "node.pub").read_text().split("=", 1)[1].strip()
        if node != "stranger":  # a key pair the head does not know
            (d / "keys" / "allowlist" / f"{node}.pub").write_text((d / "keys" / node / "node.pub").read_text())
    procs = []

    def start(name, text):
        cfg = d / f"{name}.yaml"
        cfg.write_text(text)
        log = open(d / f"{name}.log", "w")
        procs.append(subprocess.Popen([str(TROUPE_BIN), "node", "--config", str(cfg)], stdout=log, stderr=log))
        ready = d / f"{name}.ready.json"
        deadline = time.time() + 60
        while not ready.exists():
            assert procs[-1].poll() is None, (d / f"{name}.log").read_text()
            assert time.time() < deadline
            time.sleep(0.05)
        return json.loads(ready.read_text())

    common = f"""model: {DEFAULT_MODEL}
threads: 1
security:
  curve: true
  allowlist: {d}/keys/allowlist
"""
    try:
        head = start("head", f"""id: head
roles: [head]
endpoints:
  listen: tcp://127.0.0.1:0
  jobs: tcp://{ip}:0
{common}  secret_key: {d}/keys/head/node.key
peers:
  - {{id: shard-0, public_key: "{keys['shard-0']}"}}
ready_file: {d}/head.ready.json
""")
        start("shard-0", f"""id: shard-0
roles: [shard]
layers: [0, 30]
endpoints:
  listen: tcp://127.0.0.1:0
{common}  secret_key: {d}/keys/shard-0/node.key
head: head
peers:
  - {{id: head, endpoint: "{head['node_endpoint']}", public_key: "{keys['head']}"}}
ready_file: {d}/shard-0.ready.json
""")
        (d / "cluster.json").write_text(json.dumps({"job_endpoint": head["job_endpoint"], "curve": True, "dir": str(d)}))
        assert head["job_endpoint"].startswith(f"tcp://{ip}:")
        yield d, keys
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _generate_when_routed(client, *args, **kwargs):
    deadline = time.time() + 30
    while True:  # until the shard has announced itself
        try:
            return client.generate(*args, **kwargs)
        except Exception as e:  # NO_ROUTE while the shard registers
            if getattr(e, "code", "") != "NO_ROUTE" or time.time() > deadline:
                raise
            time.sleep(0.2)


def test_from_cluster_speaks_curve_with_the_keys_of_the_directory(curve_cluster):
    d, keys = curve_cluster
    with Client.from_cluster(d) as client:
        assert client.curve is True
        result = _generate_when_routed(client, "Hello there", max_tokens=12)
    assert result.tokens == token_ids(generate_lines("Hello there", "--max-tokens", "12"))
    # The same by hand: the head's public key as Z85, a client key file.
    info = json.loads((d / "cluster.json").read_text())
    with Client(info["job_endpoint"], server_key=keys["head"], client_keys=d / "keys" / "head" / "node.key") as c:
        assert c.generate("Hello there", max_tokens=12).tokens == result.tokens
    p = run("submit", "--endpoint", info["job_endpoint"], "--prompt", "Hello there", "--json", "--max-tokens", "12",
            "--server-key", keys["head"], "--client-key", d / "keys" / "head" / "node.key")
    assert p.returncode == 0, p.stderr
    assert [l["token"] for l in map(json.loads, p.stdout.splitlines()) if "token" in l] == result.tokens


def test_a_key_outside_the_allowlist_or_no_curve_is_refused_at_once(curve_cluster):
    d, keys = curve_cluster
    ep = json.loads((d / "cluster.json").read_text())["job_endpoint"]
    with Client(ep, server_key=d / "keys" / "head" / "node.pub", client_keys=d / "keys" / "stranger" / "node.key",
                timeout=5, retries=0) as c:
        start = time.monotonic()
        with pytest.raises(AuthenticationError, match="refused this client's CURVE key"):
            c.generate("Hello", max_tokens=2)
        assert time.monotonic() - start < 5  # the monitor saw the refusal: no waiting for a timeout
    # A plain client cannot talk to a CURVE endpoint: told so, not left waiting.
    with Client(ep, timeout=5, retries=0) as plain:
        with pytest.raises(AuthenticationError, match="the endpoint wants CURVE"):
            plain.generate("Hello", max_tokens=2)


def _cluster_up_has(flag):
    return flag in run("cluster", "up", "--help").stdout


def test_from_cluster_on_a_cluster_up_with_job_curve(troupe_bin, model_path):
    """`cluster up --job-curve`: CURVE on the loopback job endpoint too, with
    the client key pair and server key that cluster.json names."""
    if not _cluster_up_has("--job-curve"):
        pytest.skip("needs `cluster up --job-curve` and cluster.json's job keys (issue 9 item 4, keys on every "
                    "client door), not yet on main")
    from conftest import Cluster

    c = Cluster(shards=1, extra=("--job-curve",))
    try:
        info = c.info
        assert info["job_curve"] is True
        with Client.from_cluster(c.dir) as client:
            assert client.curve is True
            result = client.generate("Hello there", max_tokens=6)
        assert result.tokens == token_ids(generate_lines("Hello there", "--max-tokens", "6"))
        with Client(c.endpoint, timeout=5, retries=0) as plain:
            with pytest.raises(AuthenticationError):
                plain.generate("Hello", max_tokens=2)
        stranger = c.dir / "stranger"
        assert run("keys", "generate", "--out", stranger).returncode == 0
        with Client(c.endpoint, server_key=info["server_key"], client_keys=stranger / "node.key", timeout=5,
                    retries=0) as outsider:
            with pytest.raises(AuthenticationError):
                outsider.generate("Hello", max_tokens=2)
    finally:
        c.stop()
