"""Gathers bench/run.sh's results into bench/results/latest.json (one key per
figure, ratios named like decode_vs_llama_cpp_ratio) and draws
bench/results/latest.svg: aggregate decode tokens/s against concurrent
sessions, the ring's (decoded tokens over the longest session's decode time)
beside llama.cpp decoding the same prompts as one batch. Dependency-free SVG.

    .venv/bin/python bench/summarize.py DIR   # DIR holds single.json, single_512.json, cluster.json, big.json, petals.json
                                              # and, with Gemma 3 installed, single_gemma3.json, cluster_gemma3.json
"""
import datetime
import json
import pathlib
import platform
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load(d, name):
    p = d / name
    return json.loads(p.read_text()) if p.exists() else None


def chart(series, path):
    """series: {label: [(sessions, tokens_per_s), ...]} -> a small line chart (SVG)."""
    w, h, left, bottom, top, right = 520, 320, 60, 40, 30, 20
    xs = sorted({x for pts in series.values() for x, _ in pts}) or [1]
    ymax = max([y for pts in series.values() for _, y in pts] + [1]) * 1.1
    px = lambda x: left + (xs.index(x) / max(1, len(xs) - 1)) * (w - left - right)
    py = lambda y: h - bottom - (y / ymax) * (h - top - bottom)
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<text x="{left}" y="18" font-size="14">Aggregate decode tokens/s vs concurrent sessions</text>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="#333"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="#333"/>']
    for x in xs:
        out.append(f'<text x="{px(x):.0f}" y="{h - bottom + 16}" text-anchor="middle">{x}</text>')
    for i in range(5):
        y = ymax * i / 4
        out.append(f'<text x="{left - 6}" y="{py(y) + 4:.0f}" text-anchor="end">{y:.0f}</text>')
        out.append(f'<line x1="{left}" y1="{py(y):.0f}" x2="{w - right}" y2="{py(y):.0f}" stroke="#eee"/>')
    out.append(f'<text x="{(left + w - right) / 2:.0f}" y="{h - 6}" text-anchor="middle">sessions</text>')
    for i, (label, pts) in enumerate(series.items()):
        c = colours[i % len(colours)]
        path_d = " ".join(f"{'M' if j == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for j, (x, y) in enumerate(sorted(pts)))
        out.append(f'<path d="{path_d}" fill="none" stroke="{c}" stroke-width="2"/>')
        for x, y in pts:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{c}"/>')
        out.append(f'<text x="{left + 10}" y="{top + 14 + 16 * i}" fill="{c}">{label}</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


def main():
    d = pathlib.Path(sys.argv[1])
    single, single_512, cluster = load(d, "single.json"), load(d, "single_512.json"), load(d, "cluster.json")
    latest = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": {"cpu": platform.processor() or platform.machine(), "cores": __import__("os").cpu_count()},
              "figures": {}}
    f = latest["figures"]
    if single:
        f["decode_vs_llama_cpp_ratio"] = single["decode_vs_llama_cpp_ratio"]
        f["prefill_vs_llama_cpp_ratio"] = single["prefill_vs_llama_cpp_ratio"]
        f["troupe_peak_rss_mb"] = single["medians"]["troupe"]["peak_rss_mb"]
        f["llama_cpp_peak_rss_mb"] = single["medians"]["llama.cpp"]["peak_rss_mb"]
    if single_512:
        f["prefill_512_vs_llama_cpp_ratio"] = single_512["prefill_vs_llama_cpp_ratio"]
        f["prefill_512_prompt_tokens"] = single_512["prompt_tokens"]
    if cluster:
        f["ring_vs_single_ratio"] = cluster["ring_vs_single_ratio"]
        for k, v in cluster.items():
            if k.startswith("sessions_") and k.endswith("_ratio"):
                f[k] = v
        f["ring_aggregate"] = cluster["aggregate"]
        series = {"Troupe ring (head + 3 shards)": [(a["sessions"], a["aggregate_decode_tokens_per_s"])
                                                    for a in cluster["aggregate"]]}
        peer = [(a["sessions"], a["llama_cpp_batch_decode_tokens_per_s"]) for a in cluster["aggregate"]
                if "llama_cpp_batch_decode_tokens_per_s" in a]
        if peer:
            series["llama.cpp, one batch of K sequences"] = peer
        chart(series, d / "latest.svg")
    big = load(d, "big.json")
    if big:
        for k in ("big_ring_vs_llama_cpp_ratio", "big_single_vs_llama_cpp_ratio", "shards_within_rss_bound"):
            if k in big:
                f[k] = big[k]
    # The second family (Gemma 3 270M), when scripts/setup.sh --with-test-deps installed it.
    g_single, g_cluster = load(d, "single_gemma3.json"), load(d, "cluster_gemma3.json")
    if g_single:
        f["gemma3_decode_vs_llama_cpp_ratio"] = g_single["decode_vs_llama_cpp_ratio"]
        f["gemma3_prefill_vs_llama_cpp_ratio"] = g_single["prefill_vs_llama_cpp_ratio"]
        f["gemma3_troupe_peak_rss_mb"] = g_single["medians"]["troupe"]["peak_rss_mb"]
    if g_cluster:
        f["gemma3_ring_vs_single_ratio"] = g_cluster["ring_vs_single_ratio"]
        f["gemma3_head_compute_share"] = g_cluster["head_compute_share"]
    petals = load(d, "petals.json")
    if petals and "vs_petals_ratio" in petals:
        f["vs_petals_ratio"] = petals["vs_petals_ratio"]
    latest["sources"] = {name: load(d, name) for name in ("single.json", "single_512.json", "cluster.json",
                                                           "big.json", "petals.json", "single_gemma3.json",
                                                           "cluster_gemma3.json")}
    (d / "latest.json").write_text(json.dumps(latest, indent=1) + "\n")
    print(json.dumps(latest["figures"], indent=1))


if __name__ == "__main__":
    main()
