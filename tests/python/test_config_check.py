"""`troupe config check [--files] FILE...` (issue 10, item 7): every config
in deploy/ and the configs the tests write pass; each of a set of broken
configs — one fault each, the faults operators met deploying — fails with
exit code 1 and a line naming that fault; a file with several faults gets a
line for each."""
import os
import shutil
import signal
import subprocess
import tempfile

import pytest
import yaml

from conftest import DEFAULT_MODEL, ROOT
from hand_cluster import HandCluster, troupe
from test_deploy_faults import SPANS, _head, _shard

DEPLOY_ENV = {"TROUPE_ADVERTISE_HOST": "node-1.example", "TROUPE_NODE_ID": "shard-0"}


def check(*files, files_too=False, env=None):
    args = ["config", "check", *(["--files"] if files_too else []), *map(str, files)]
    return troupe(*args, env={**os.environ, **(env or {})}, timeout=60)


def test_every_config_in_deploy_passes():
    configs = sorted((ROOT / "deploy").rglob("*.yaml"))
    node_configs = [c for c in configs if "roles:" in c.read_text()]
    assert len(node_configs) >= 2, configs
    for c in node_configs:
        p = check(c, env=DEPLOY_ENV)
        assert p.returncode == 0, f"{c}: {p.stdout}{p.stderr}"
        assert p.stdout.startswith("ok: 1 node config(s)"), p.stdout


def test_configs_the_tests_write_pass_with_their_files(tmp_path):
    c = HandCluster(tmp_path, ["head", "shard-0", "shard-1"])
    _head(c, 5601)
    for i in range(len(SPANS)):
        _shard(c, i, "tcp://127.0.0.1:5601")
    files = [tmp_path / f"{n}.yaml" for n in ("head", "shard-0", "shard-1")]
    p = check(*files, files_too=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "as one cluster, with the files they name, no problems" in p.stdout


def test_the_configs_cluster_up_writes_pass(tmp_path):
    d = tmp_path / "c"
    proc = subprocess.Popen([str(ROOT / "build" / "bin" / "troupe"), "cluster", "up", "--shards", "2", "--dir", str(d),
                             "--base-port", "0", "--threads", "1", "--cache-budget-mb", "32", "--model",
                             str(DEFAULT_MODEL)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout.readline().startswith("tcp://")
        p = check(d / "head.yaml", d / "shard-0.yaml", d / "shard-1.yaml", files_too=True)
        assert p.returncode == 0, p.stdout + p.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def cluster_dir():
    """A good three-node cluster's configs and keys, copied by each broken case."""
    tmp = tempfile.TemporaryDirectory(prefix="troupe-config-check-")
    c = HandCluster(tmp.name, ["head", "shard-0", "shard-1", "stranger"], allow=["head", "shard-0", "shard-1"])
    _head(c, 5601)
    for i in range(len(SPANS)):
        _shard(c, i, "tcp://127.0.0.1:5601")
    yield tmp.name
    tmp.cleanup()


def _edit(d, name, change):
    path = os.path.join(d, f"{name}.yaml")
    with open(path) as f:
        config = yaml.safe_load(f)
    change(config)
    with open(path, "w") as f:
        yaml.safe_dump(config, f)


def _peer(config, peer_id):
    return next(p for p in config["peers"] if p["id"] == peer_id)


# (what is broken, how, the words its line must hold, whether --files)
BROKEN = [
    ("a misspelt key", lambda d: _edit(d, "head", lambda c: c["endpoints"].update(listne=c["endpoints"]["listen"])),
     "head.yaml: endpoints: unknown key 'listne'", False),
    ("every address bound, none advertised",
     lambda d: _edit(d, "head", lambda c: c["endpoints"].pop("advertise")),
     "binds every address; set endpoints: advertise", False),
    ("an address nobody can dial advertised",
     lambda d: _edit(d, "head", lambda c: c["endpoints"].update(advertise="tcp://0.0.0.0:5601")),
     "advertise tcp://0.0.0.0:5601 is no address a peer can dial", False),
    ("plain links off loopback", lambda d: _edit(d, "shard-0", lambda c: (
        c.update(security={"curve": False}), c["endpoints"].update(listen="tcp://10.0.0.5:5601"))),
     "shard-0.yaml: security: listen tcp://10.0.0.5:5601 is not loopback", False),
    ("a shard without layers", lambda d: _edit(d, "shard-1", lambda c: c.pop("layers")),
     "shard-1.yaml: layers: a shard needs [begin, end] or auto", False),
    ("an unset environment variable", lambda d: _edit(d, "shard-1", lambda c: c["endpoints"].update(
        advertise="tcp://${TROUPE_TEST_NOT_SET}:5601")),
     "shard-1.yaml: endpoints: advertise: ${TROUPE_TEST_NOT_SET} is not set", False),
    ("two nodes with one id", lambda d: _edit(d, "shard-1", lambda c: c.update(id="shard-0")),
     "shard-1.yaml: id 'shard-0' is also the id of", False),
    ("a shard dialling the head at the wrong port",
     lambda d: _edit(d, "shard-1", lambda c: _peer(c, "head").update(endpoint="tcp://127.0.0.1:5602")),
     "shard-1.yaml: peers: the head is dialled at tcp://127.0.0.1:5602, but", False),
    ("a gap in the fixed spans", lambda d: _edit(d, "shard-1", lambda c: c.update(layers=[20, 30])),
     "layers from 15 on are served by no chain of shards starting at layer 0", False),
    ("a head missing from the head role", lambda d: _edit(d, "head", lambda c: c.update(roles=["shard"], layers=[0, 1])),
     "no config among these is a head", False),
    ("a shard's key missing from the head's allowlist",
     lambda d: os.remove(os.path.join(d, "keys", "allowlist", "shard-1.pub")),
     "head.yaml: security: allowlist", True),
    ("a shard's key missing from another shard's allowlist (shard to shard)",
     lambda d: (shutil.copytree(os.path.join(d, "keys", "allowlist"), os.path.join(d, "keys", "s1")),
                os.remove(os.path.join(d, "keys", "s1", "shard-0.pub")),
                _edit(d, "shard-1", lambda c: c["security"].update(allowlist="keys/s1"))),
     "'shard-1' would refuse hidden states from shard 'shard-0' (shards dial each other)", True),
    ("the wrong head key in a shard's peers",
     lambda d: _edit(d, "shard-0", lambda c: _peer(c, "head").update(public_key="keys/stranger/node.pub")),
     "shard-0.yaml: peers: the public key given for 'head'", True),
    ("a model that is not there", lambda d: _edit(d, "shard-0", lambda c: c.update(model="/nowhere/m.gguf")),
     "shard-0.yaml: model: /nowhere/m.gguf does not exist", True),
    ("a secret key others can read", lambda d: os.chmod(os.path.join(d, "keys", "shard-1", "node.key"), 0o644),
     "shard-1.yaml: security: secret_key:", True),
]


@pytest.mark.parametrize("what,breaks,says,files_too", BROKEN, ids=[b[0] for b in BROKEN])
def test_a_broken_config_is_named(cluster_dir, tmp_path, what, breaks, says, files_too):
    d = str(tmp_path / "c")
    shutil.copytree(cluster_dir, d)
    # Configs name their keys by absolute path: point them at this copy.
    for name in ("head", "shard-0", "shard-1"):
        path = os.path.join(d, f"{name}.yaml")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace(cluster_dir, d))
    files = [os.path.join(d, f"{n}.yaml") for n in ("head", "shard-0", "shard-1")]
    assert check(*files, files_too=True).returncode == 0, "the copy is good before it is broken"
    breaks(d)
    p = check(*files, files_too=files_too)
    assert p.returncode == 1, f"{what}: exit {p.returncode}: {p.stdout}"
    lines = p.stdout.splitlines()
    assert any(says in line for line in lines), f"{what}: no line says {says!r}:\n{p.stdout}"
    assert "problem(s)" in p.stderr


def test_every_problem_of_a_file_gets_its_own_line(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("id: a\nroles: [shard, chef]\nlayers: [5, 2]\ncolour: red\nthreads: -1\n")
    p = check(f)
    assert p.returncode == 1
    lines = p.stdout.splitlines()
    for says in ("unknown key 'colour'", "unknown role 'chef'", "layers: begin 5 >= end 2", "threads: must be >= 0",
                 "model: missing"):
        assert sum(says in line for line in lines) == 1, f"{says!r} in:\n{p.stdout}"
    assert all(line.startswith(f"{f}: ") for line in lines), p.stdout
