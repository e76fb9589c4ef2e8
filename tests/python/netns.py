"""Hosts for tests: one Linux network namespace per host on a private bridge,
each with its own /etc/hosts — what containers on one compose network are,
without a container engine.

    net = Network(["head", "shard-0", "client"])   # raises Unavailable (why) if namespaces cannot be made
    net.popen("head", ["troupe", "node", ...], env=..., stdout=...)
    net.run("client", ["troupe", "submit", ...])
    net.close()                                    # kills what it started, removes every namespace

Each host gets 10.213.<n>.<i>/24 on a bridge that lives in a namespace of
its own (nothing is added to the machine's own network), `lo` up, and an
/etc/hosts naming every host (bind-mounted in a private mount namespace, so
the machine's /etc/hosts is untouched). Needs root and `ip`/`unshare`.
"""
import os
import subprocess
import tempfile


class Unavailable(Exception):
    """Namespaces cannot be made here; the message says why."""


def _ip(*args, check=True):
    p = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise Unavailable(f"`ip {' '.join(args)}` failed: {p.stderr.strip()}")
    return p


class Network:
    def __init__(self, hosts):
        if os.geteuid() != 0:
            raise Unavailable("network namespaces need root (this test runs as uid %d)" % os.geteuid())
        tag = f"tr{os.getpid() % 100000}"
        self.subnet = 10 + os.getpid() % 200  # 10.213.<subnet>.0/24: tests in parallel do not meet
        self.switch = f"{tag}sw"
        self.ns = {h: f"{tag}h{i}" for i, h in enumerate(hosts)}
        self.addr = {h: f"10.213.{self.subnet}.{i + 2}" for i, h in enumerate(hosts)}
        self.procs = []
        self.made = []
        self.tmp = tempfile.TemporaryDirectory(prefix="troupe-netns-")
        self.hosts_file = os.path.join(self.tmp.name, "hosts")
        with open(self.hosts_file, "w") as f:
            f.write("127.0.0.1 localhost\n::1 localhost\n")
            for h, a in self.addr.items():
                f.write(f"{a} {h}\n")
        try:
            _ip("netns", "add", self.switch)
            self.made.append(self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
            for i, (h, ns) in enumerate(self.ns.items()):
                _ip("netns", "add", ns)
                self.made.append(ns)
                outside, inside = f"{tag}a{i}", f"{tag}b{i}"
                _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
                _ip("link", "set", outside, "netns", self.switch)
                _ip("link", "set", inside, "netns", ns)
                _ip("-n", self.switch, "link", "set", outside, "master", "br0")
                _ip("-n", self.switch, "link", "set", outside, "up")
                _ip("-n", ns, "link", "set", inside, "name", "eth0")
                _ip("-n", ns, "addr", "add", f"{self.addr[h]}/24", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
                _ip("-n", ns, "link", "set", "lo", "up")
        except Unavailable:
            self.close()
            raise

    def _wrap(self, host, argv):
        # A private mount namespace in which /etc/hosts is ours.
        return ["ip", "netns", "exec", self.ns[host], "unshare", "--mount", "--propagation", "private", "sh", "-c",
                'mount --bind "$0" /etc/hosts && exec "$@"', self.hosts_file, *map(str, argv)]

    def popen(self, host, argv, **kw):
        p = subprocess.Popen(self._wrap(host, argv), **kw)
        self.procs.append(p)
        return p

    def run(self, host, argv, timeout=300, **kw):
        return subprocess.run(self._wrap(host, argv), capture_output=True, text=True, timeout=timeout, **kw)

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for ns in reversed(self.made):
            _ip("netns", "del", ns, check=False)  # its veth ends go with it
        self.made = []
        self.tmp.cleanup()
