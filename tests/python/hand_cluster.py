"""A hand-made deployment for tests: keys from `troupe keys generate`, one
node config (YAML, cluster/node_config.h) per node written by the test, and
one `troupe node --config` process each — what an operator runs on separate
machines, here on one. Unlike `cluster up`, nothing is arranged for the
nodes: each test writes exactly the configs it means to check.

    c = HandCluster(tmp_path, ["head", "shard-0", "shard-1"])
    c.write("head", {...})            # any node config keys
    c.start("head", "shard-0", ...)    # Popen each, logs in DIR/<id>.log
    c.wait_ready("head")               # its ready_file: bound endpoints
    ...
    c.stop()                           # SIGTERM, then SIGKILL what is left
"""
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import time

import yaml

from conftest import DEFAULT_MODEL, TROUPE_BIN


def free_port(host="127.0.0.1"):
    s = socket.socket()
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def troupe(*args, timeout=120, **kw):
    return subprocess.run([str(TROUPE_BIN), *map(str, args)], capture_output=True, text=True, timeout=timeout, **kw)


def wait_for(what, check, timeout=60, every=0.2):
    deadline = time.time() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.time() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(every)


class HandCluster:
    def __init__(self, root, names, allow=None):
        """Keys for every name in `root`/keys/<name>/; `allow` (default: every
        name) is who goes into the shared allowlist `root`/keys/allowlist/."""
        self.dir = pathlib.Path(root)
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "run").mkdir(exist_ok=True)
        self.procs = {}
        self.logs = {}
        for name in names:
            p = troupe("keys", "generate", "--out", self.dir / "keys" / name)
            assert p.returncode == 0, p.stderr
        self.allowlist(self.dir / "keys" / "allowlist", allow if allow is not None else names)

    def allowlist(self, path, names):
        """A directory holding the .pub of each of `names`; returns its path."""
        path = pathlib.Path(path)
        path.mkdir(parents=True, exist_ok=True)
        for name in names:
            shutil.copy(self.dir / "keys" / name / "node.pub", path / f"{name}.pub")
        return path

    def public_key(self, name):
        return str(self.dir / "keys" / name / "node.pub")

    def write(self, name, config):
        """Writes DIR/<name>.yaml; defaults: id, model, threads 1, ready_file."""
        c = {"id": name, "model": str(DEFAULT_MODEL), "threads": 1, "ready_file": f"run/{name}.ready.json"}
        c.update(config)
        path = self.dir / f"{name}.yaml"
        path.write_text(yaml.safe_dump(c, sort_keys=False))
        return path

    def start(self, *names, env=None):
        for name in names:
            log = open(self.dir / f"{name}.log", "w+")
            self.logs[name] = log
            self.procs[name] = subprocess.Popen(
                [str(TROUPE_BIN), "node", "--config", str(self.dir / f"{name}.yaml")], stdout=log, stderr=log,
                env={**os.environ, **(env or {})})

    def ready(self, name, timeout=60):
        path = self.dir / "run" / f"{name}.ready.json"

        def check():
            p = self.procs[name]
            assert p.poll() is None, f"node {name} exited ({p.returncode}): {self.log(name)}"
            return path.exists() and json.loads(path.read_text())

        return wait_for(f"node {name} to be ready", check, timeout)

    def log(self, name):
        log = self.logs[name]
        log.flush()
        log.seek(0)
        return log.read()

    def all_logs(self):
        return "\n".join(f"--- {n}\n{self.log(n)}" for n in self.logs)

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in self.logs.values():
            log.close()


def status(job_endpoint):
    p = troupe("status", "--endpoint", job_endpoint, "--json", timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def health(http_port):
    """(HTTP status, JSON body) of GET /health."""
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/health", timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
