"""A 3-shard ring across hosts on a slow network: tokens/s at 0, 20 and 100
ms per hop, hidden states as f32 vs int8 blocks, and the bytes each hop
carries per token — side by side in one invocation.

Every node (head, shard-0..2) runs in a network namespace of its own on a
private bridge (tests/python/netns.py), links limited to 100 Mbit/s (tc
tbf). The delay per hop is a delaying TCP relay per node (this kernel has no
netem), on a host of its own: each node advertises its relay, so every step
a node receives has crossed one relay (and a ping's round trip two). int8:
the head's int8_link_rtt_ms set below every measured round trip, so every
hop's hidden states go as int8 blocks (lossy: the answer may differ from f32).
A token goes round the ring once per decode step: embedding (head) ->
shard-0 -> shard-1 -> shard-2 -> LM head and sampler (head): 4 hops, so a
step costs 4 one-way delays plus compute — the round trips per token are 1
(one circuit of the ring), the one-way hops 4.

    sudo .venv/bin/python bench/bench_wan.py [--delays 0 20 100] [--tokens 32] [--out bench/results/wan.json]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from conftest import TROUPE_BIN  # noqa: E402
from hand_cluster import HandCluster, wait_for  # noqa: E402
from netns import Network  # noqa: E402

SHARDS = [(0, 10), (10, 20), (20, 30)]
NODES = ["head"] + [f"shard-{i}" for i in range(len(SHARDS))]
PORT = 5601
PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."


def ring(tmp, delay_ms, int8):
    net = Network([*NODES, "wan"])
    for host in NODES:
        subprocess.run(["ip", "netns", "exec", net.ns[host], "tc", "qdisc", "add", "dev", "eth0", "root", "tbf",
                        "rate", "100mbit", "burst", "32kb", "latency", "50ms"], check=True)
    c = HandCluster(tmp, NODES)
    advertise = {}
    for name in NODES:
        if delay_ms > 0:
            relay = net.popen("wan", [sys.executable, ROOT / "tests" / "python" / "delay_relay.py", net.addr["wan"],
                                      net.addr[name], PORT, delay_ms], stdout=subprocess.PIPE, text=True)
            advertise[name] = f"tcp://wan:{int(relay.stdout.readline())}"
        else:
            advertise[name] = f"tcp://{name}:{PORT}"
    security = lambda name: {"curve": True, "secret_key": f"keys/{name}/node.key", "allowlist": "keys/allowlist"}
    peer = lambda name, endpoint=None: {"id": name, "public_key": c.public_key(name),
                                        **({"endpoint": endpoint} if endpoint else {})}
    c.write("head", {"roles": ["head"], "int8_link_rtt_ms": 0.001 if int8 else 0, "prefix_reuse": False,
                     "endpoints": {"listen": f"tcp://0.0.0.0:{PORT}", "advertise": advertise["head"],
                                   "jobs": "tcp://127.0.0.1:0"},
                     "security": security("head"), "peers": [peer(n) for n in NODES[1:]]})
    for i, (b, e) in enumerate(SHARDS):
        name = f"shard-{i}"
        c.write(name, {"roles": ["shard"], "layers": [b, e], "cache_budget_mb": 64,
                       "endpoints": {"listen": f"tcp://0.0.0.0:{PORT}", "advertise": advertise[name]},
                       "security": security(name), "head": "head",
                       "peers": [peer("head", advertise["head"]), *[peer(n) for n in NODES[1:] if n != name]]})
    for name in NODES:
        log = open(c.dir / f"{name}.log", "w+")
        c.logs[name] = log
        c.procs[name] = net.popen(name, [TROUPE_BIN, "node", "--config", c.dir / f"{name}.yaml"], stdout=log,
                                  stderr=log)
    head = c.ready("head")
    return net, c, head


def troupe(net, *args, timeout=600):
    p = net.run("head", [TROUPE_BIN, *args], timeout=timeout)
    if p.returncode != 0:
        raise SystemExit(f"troupe {' '.join(map(str, args))}: {p.stderr}")
    return p.stdout


def nodes(net, head):
    return json.loads(troupe(net, "status", "--endpoint", head["job_endpoint"], "--json"))["nodes"]


def sent(status):
    """Bytes of hidden states sent per directed hop: {(from, to): bytes}."""
    out = {}
    for node, fields in status.items():
        for key, value in fields.items():
            if key.startswith('step_bytes_sent_total{to="'):
                out[(node, key.split('"')[1])] = value
    return out


def measure(delay_ms, int8, tokens):
    with tempfile.TemporaryDirectory(prefix="troupe-wan-") as tmp:
        net, c, head = ring(pathlib.Path(tmp), delay_ms, int8)
        try:
            wait_for("the ring", lambda: nodes(net, head)["head"]["route_ready"] == 1, timeout=120)
            wait_for("round trips", lambda: all(nodes(net, head).get(n, {}).get("rtt_ms", 0) > 0 for n in NODES[1:]),
                     timeout=60)
            submit = ["submit", "--endpoint", head["job_endpoint"], "--prompt", PROMPT, "--json"]
            troupe(net, *submit, "--max-tokens", "4")  # warm-up
            # The bytes of a decode step: a job of `tokens` less one of 1 (its prefill alone).
            before = sent(nodes(net, head))
            troupe(net, *submit, "--max-tokens", "1")
            prefill = sent(nodes(net, head))
            t0 = time.time()
            out = troupe(net, *submit, "--max-tokens", str(tokens), "--min-tokens", str(tokens))
            wall = time.time() - t0
            status = nodes(net, head)
            after = sent(status)
            done = json.loads(out.strip().splitlines()[-1])
            answer = [json.loads(l)["token"] for l in out.splitlines() if '"token"' in l]
            steps = done["generated_tokens"] - 1  # decode steps: every token after the first
            per_hop = {f"{a}->{b}": (after[(a, b)] - 2 * prefill.get((a, b), 0) + before.get((a, b), 0)) / steps
                       for (a, b) in after}
            return {"delay_ms_per_hop": delay_ms, "hidden_states": "int8" if int8 else "f32",
                    "decode_tokens_per_s": done["decode_tokens_per_s"], "tokens": steps, "wall_s": wall,
                    "rtt_ms": {n: status[n].get("rtt_ms") for n in NODES[1:]}, "bytes_per_token_per_hop": per_hop,
                    "answer": answer}
        finally:
            c.stop()
            net.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--delays", type=float, nargs="+", default=[0, 20, 100])
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows = []
    for d in args.delays:
        for int8 in (False, True):
            r = measure(d, int8, args.tokens)
            rows.append(r)
            hops = ", ".join(f"{k} {v:.0f} B" for k, v in sorted(r["bytes_per_token_per_hop"].items()))  # per decode step
            print(f"{d:5.0f} ms/hop  {r['hidden_states']:4s}  decode {r['decode_tokens_per_s']:6.2f} tok/s  "
                  f"(4 hops: floor {1000 / (4 * d) if d else float('inf'):6.2f} tok/s)  per token: {hops}", flush=True)
        f32, i8 = rows[-2], rows[-1]
        same = next((i for i, (a, b) in enumerate(zip(f32["answer"], i8["answer"])) if a != b), len(f32["answer"]))
        print(f"         int8 / f32 tokens/s {i8['decode_tokens_per_s'] / f32['decode_tokens_per_s']:.2f}x; "
              f"the int8 answer follows the f32 one for {same} of {len(f32['answer'])} tokens", flush=True)
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
