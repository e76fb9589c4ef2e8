"""deploy/compose.yaml run without a container engine: every service — the
keys init step, the head, three shards — as a plain process in a network
namespace of its own, named as compose names it (/etc/hosts per namespace),
with the service's own command and environment and the image's ENV; volumes
become paths: what a container sees at /etc/troupe, /var/lib/troupe/keys
and /models is a folder here, and those container paths in commands and
environment values are rewritten to it (the configs themselves are used as
they are). Then a client in a namespace of its own asks the head over the
CURVE job endpoint and the HTTP API, as a compose user would from outside.

Also: `troupe config check` on the configs as each service sees them (with
--files: the keys the init step made, the model) passes.

With TROUPE_DEPLOY_IMAGE set to an image deploy/build-image.sh built (about
50 minutes, so not by default), the same test runs every service in that
image instead (`buildah run --isolation chroot`, the container paths bind-
mounted from the same folders, environments unrewritten): the real
containers of compose.yaml, on namespaces in place of compose's network.
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import time

import pytest
import yaml

from conftest import DEFAULT_MODEL, ROOT, TROUPE_BIN
from netns import Network, Unavailable
from test_cluster import generate, json_lines, tokens

DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"


def image_env():
    """The ENV lines of the image's final stage (deploy/Dockerfile)."""
    env = {}
    final = DEPLOY.joinpath("Dockerfile").read_text().split("\nFROM ")[-1]
    for m in re.finditer(r"^ENV (\w+)=(\S+)", final, re.M):
        env[m.group(1)] = m.group(2)
    return env


class Topology:
    """The compose file's services as processes; paths mapped to `root`."""

    def __init__(self, root):
        self.spec = yaml.safe_load(COMPOSE.read_text())
        self.root = pathlib.Path(root)
        self.services = self.spec["services"]
        (self.root / "keys").mkdir()
        (self.root / "bin").mkdir()
        os.symlink(TROUPE_BIN, self.root / "bin" / "troupe")  # the image's /usr/local/bin/troupe
        # Container path -> host path, longest first.
        self.paths = {}
        for name, svc in self.services.items():
            for v in svc.get("volumes", []):
                src, dst = v.split(":")[:2]
                host = (COMPOSE.parent / src).resolve() if src.startswith(".") else self.root / src
                self.paths[dst] = host
        self.paths["/models"] = DEFAULT_MODEL.parent  # the model baked into the image
        self.paths["/var/lib/troupe"] = self.root / "state"  # the image's WORKDIR and home
        (self.root / "state").mkdir()

    def host_path(self, value):
        for dst in sorted(self.paths, key=len, reverse=True):
            if value == dst or value.startswith(dst + "/"):
                return str(self.paths[dst]) + value[len(dst):]
            value = value.replace(" " + dst + "/", " " + str(self.paths[dst]) + "/")
        return value

    def env(self, name):
        env = {"PATH": f"{self.root / 'bin'}:/usr/bin:/bin", "HOME": str(self.root / "state")}
        env.update({k: self.host_path(v) for k, v in image_env().items()})
        env.update({k: self.host_path(str(v)) for k, v in (self.services[name].get("environment") or {}).items()})
        return env

    def argv(self, name):
        svc = self.services[name]
        entry = svc.get("entrypoint") or ["troupe"]  # the image's ENTRYPOINT
        command = svc.get("command") or []
        return self.exec(name, [*entry, *command])

    def exec(self, name, argv):
        """`argv` (container paths) run as service `name` would run it."""
        return [self.host_path(str(a)) for a in argv]

    def close(self):
        pass


class ImageTopology(Topology):
    """The same services in the image itself: one buildah container each."""

    def __init__(self, root, image):
        super().__init__(root)
        self.image = image
        self.containers = []
        os.chown(self.root / "keys", 10001, 10001)  # the image's user troupe writes the keys volume

    def env(self, name):
        return {**os.environ}  # buildah's own; the service's goes into the container (argv)

    def exec(self, name, argv):
        svc = self.services[name]
        ctr = subprocess.run(["buildah", "from", "--pull-never", self.image], capture_output=True, text=True,
                             check=True).stdout.strip()
        self.containers.append(ctr)
        volumes = []
        for v in svc.get("volumes", []):
            src, dst = v.split(":")[:2]
            host = (COMPOSE.parent / src).resolve() if src.startswith(".") else self.root / src
            volumes += ["-v", f"{host}:{dst}"]
        env = [f"--env={k}={v}" for k, v in (svc.get("environment") or {}).items()]
        return ["buildah", "run", "--isolation", "chroot", *volumes, *env, ctr, "--", *map(str, argv)]

    def close(self):
        for ctr in self.containers:
            subprocess.run(["buildah", "rm", ctr], capture_output=True)


@pytest.fixture
def network():
    try:
        net = Network(["head", "shard-0", "shard-1", "shard-2", "client"])
    except Unavailable as e:
        pytest.skip(f"network namespaces unavailable: {e}")
    yield net
    net.close()


def _wait(what, check, timeout):
    deadline = time.time() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


@pytest.fixture(params=["processes", "image"])
def topology(request, tmp_path):
    if request.param == "processes":
        t = Topology(tmp_path)
    else:
        image = os.environ.get("TROUPE_DEPLOY_IMAGE")
        if not image:
            pytest.skip("set TROUPE_DEPLOY_IMAGE to an image deploy/build-image.sh built (e.g. localhost/troupe:dev)")
        assert shutil.which("buildah"), "TROUPE_DEPLOY_IMAGE is set but buildah is missing (apt-get install buildah)"
        t = ImageTopology(tmp_path, image)
    yield t
    t.close()


def test_the_compose_topology_answers_a_prompt(network, topology, tmp_path):
    t = topology
    assert set(t.services) == {"keys", "head", "shard-0", "shard-1", "shard-2"}
    # The init step, to completion (depends_on: service_completed_successfully).
    init = network.run("head", t.argv("keys"), env=t.env("keys"), timeout=120)
    assert init.returncode == 0, init.stderr
    keys = tmp_path / "keys"
    assert sorted(p.name for p in (keys / "allowlist").iterdir()) == [
        "head.pub", "shard-0.pub", "shard-1.pub", "shard-2.pub"]
    # Each node's config as that node sees it: no problem, files included.
    for name in ("head", "shard-0", "shard-1", "shard-2"):
        config = next(str(a) for a in t.services[name]["command"] if str(a).endswith(".yaml"))
        p = network.run(name, t.exec(name, ["troupe", "config", "check", "--files", config]), env=t.env(name),
                        timeout=60)
        assert p.returncode == 0, f"{name}: {p.stdout}{p.stderr}"
    logs = {}
    for name in ("head", "shard-0", "shard-1", "shard-2"):
        logs[name] = open(tmp_path / f"{name}.log", "w+")
        network.popen(name, t.argv(name), env=t.env(name), stdout=logs[name], stderr=logs[name])

    def log(name):
        logs[name].flush()
        return (tmp_path / f"{name}.log").read_text()

    def all_logs():
        return "\n".join(f"--- {n}\n{log(n)}" for n in logs)

    # A client as `docker compose run head troupe ...` would be, on a host of its own.
    client = ["--endpoint", "tcp://head:5600", "--server-key", "/var/lib/troupe/keys/head/node.pub",
              "--client-key", "/var/lib/troupe/keys/client/node.key"]

    def routed():
        p = network.run("client", t.exec("head", ["troupe", "status", *client, "--json"]), env=t.env("head"),
                        timeout=60)
        return p.returncode == 0 and json.loads(p.stdout)["nodes"]["head"].get("route_ready") == 1

    _wait("the three shards to join the head", routed, 180)
    # compose.yaml's TROUPE_BURST_WAIT_MS reached every node (four nodes on one host's cores).
    p = network.run("client", t.exec("head", ["troupe", "status", *client, "--json"]), env=t.env("head"), timeout=60)
    nodes = json.loads(p.stdout)["nodes"]
    assert {n: nodes[n].get("burst_wait_ms") for n in ("head", "shard-0", "shard-1", "shard-2")} == {
        n: 10 for n in ("head", "shard-0", "shard-1", "shard-2")}, nodes
    assert "shard 'shard-2' joined: layers 20-30 at tcp://shard-2:5601" in log("head"), all_logs()
    prompt = "What is the capital of France?"
    p = network.run("client", t.exec("head", ["troupe", "submit", *client, "--prompt", prompt, "--chat",
                                              "--max-tokens", "16", "--json"]), env=t.env("head"), timeout=120)
    assert p.returncode == 0, p.stderr + all_logs()
    assert tokens(json_lines(p.stdout)) == tokens(generate(prompt, "--chat", "--max-tokens", "16"))
    # The HTTP API on head:8000 with the key the init step wrote.
    api_key = (keys / "api_keys.txt").read_text().split()[1]
    body = json.dumps({"model": "any", "max_tokens": 8, "temperature": 0,
                       "messages": [{"role": "user", "content": prompt}]})
    script = ("import sys, urllib.request; r = urllib.request.urlopen(urllib.request.Request("
              "'http://head:8000/v1/chat/completions', data=sys.argv[1].encode(), headers={"
              "'Authorization': 'Bearer ' + sys.argv[2], 'Content-Type': 'application/json'}), timeout=60); "
              "print(r.read().decode())")
    h = network.run("client", [shutil.which("python3"), "-c", script, body, api_key], timeout=90)
    assert h.returncode == 0, h.stderr + all_logs()
    answer = json.loads(h.stdout)
    assert answer["choices"][0]["message"]["content"], answer
    assert "Paris" in answer["choices"][0]["message"]["content"] or answer["usage"]["completion_tokens"] == 8
