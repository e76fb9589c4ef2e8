"""The admin console (http/console/, served at / on the head's HTTP port) in a
real headless Chromium driven by Playwright, against a real local cluster:
three layer spans of the default model, two replicas each, and an admin key.

* the coverage map shows every node and every layer, two replicas each;
* a shard frozen with SIGSTOP turns non-ok within the heartbeat TTL, and ok
  again after SIGCONT;
* a running job appears, its progress moves, it finishes, and its session's
  waterfall shows every hop of its route;
* cancel and drain from the page are refused without the admin key (the
  message area says why, nothing changes), and work with it.

Uses the system browser (/usr/bin/chromium, Debian's `chromium`; never
`playwright install`). Full-page screenshots go to $TROUPE_TEST_ARTIFACTS/console
(default: test-artifacts/console in the build folder of the troupe binary): look at them.
"""
import os
import pathlib
import random
import re
import signal
import subprocess
import time

import pytest
import requests

from conftest import TROUPE_BIN
from test_cluster import Cluster, json_lines, run, tokens

CHROMIUM = pathlib.Path("/usr/bin/chromium")
ADMIN_KEY = "sk-console-admin-0123456789"
TTL_S = 10  # the registry's heartbeat TTL (scheduling/registry.h) unless /api/v1/cluster says otherwise
SLACK_S = 5  # a heartbeat period, a poll of the page, and a loaded machine
SPANS = [[0, 10], [10, 20], [20, 30]]
ARTIFACTS = pathlib.Path(os.environ.get("TROUPE_TEST_ARTIFACTS", TROUPE_BIN.parent.parent / "test-artifacts"))
ARTIFACTS = ARTIFACTS / "console"

sync_api = pytest.importorskip("playwright.sync_api", reason="the Python package playwright is not installed "
                                                             "(scripts/setup.sh --with-test-deps)")
expect = sync_api.expect
if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium (scripts/setup.sh --with-test-deps)",
                allow_module_level=True)


# ------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def cluster(troupe_bin, model_path, tmp_path_factory):
    keys = tmp_path_factory.mktemp("console-keys") / "admin.txt"
    keys.write_text(f"ops {ADMIN_KEY}\n")
    c = Cluster(shards=3, extra=("--replicas", "2", "--http-port", "0", "--admin-key-file", keys,
                                 "--cache-budget-mb", "64"))
    yield c
    c.stop()


@pytest.fixture(scope="module")
def url(cluster):
    return f"http://127.0.0.1:{cluster.info['http_port']}/"


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser, url):
    """A fresh tab (empty sessionStorage: no admin key) on the console, its first poll drawn."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    errors = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto(url)
    expect(tab.locator("#coverage g[data-node]").first).to_be_attached(timeout=10_000)
    yield tab
    context.close()
    assert not errors, f"the page threw: {errors}"


# ------------------------------------------------------------------ helpers

def screenshot(page, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"\nscreenshot: {path}")


def api(url, path):
    r = requests.get(url + "api/v1/" + path, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def node_info(cluster, node_id):
    """The node's cluster.json entry ({} for a name cluster up did not start)."""
    return next((n for n in cluster.info["nodes"] if n["id"] == node_id), {})


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def wait_for(what, check, timeout):
    deadline = time.time() + timeout
    while not (got := check()):
        assert time.time() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.2)
    return got


class Job:
    """`troupe submit` of a long answer (exactly n tokens) in the background, under a
    64-bit job id above 2^53 (the page must keep ids as strings)."""

    def __init__(self, cluster, n):
        self.id = str(2**63 + random.randrange(2**40))
        self.n = n
        self.proc = subprocess.Popen(
            [str(TROUPE_BIN), "submit", "--endpoint", cluster.endpoint, "--job-id", self.id, "--json",
             "--prompt", "Tell me a long story about a lighthouse keeper.",
             "--max-tokens", str(n), "--min-tokens", str(n)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def row(self, page):
        return page.locator(f'#jobs tr[data-job="{self.id}"]')

    def wait_running(self, page, tokens_at_least=1):
        expect(self.row(page)).to_have_attribute("data-state", "running", timeout=60_000)
        wait_for(f"job {self.id} to make {tokens_at_least} tokens",
                 lambda: int(self.row(page).get_attribute("data-tokens")) >= tokens_at_least, timeout=60)

    def finish(self, timeout=300):
        """(exit status, tokens, stderr) once it ends."""
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, tokens(json_lines(out)), err

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def jobs():
    started = []
    yield lambda cluster, n: started.append(Job(cluster, n)) or started[-1]
    for j in started:
        j.kill()


def shards_of(cluster, route):
    """The shard ids of a job's data-route (its hops: the head, the shards, the head again)."""
    return [n for n in route.split(",") if node_info(cluster, n).get("role") == "shard"]


def refused(page, button, path, status, dismiss=True):
    """Clicks `button`; the message area then names the refused POST `path` and its `status`."""
    button.click()
    line = page.locator("#message [data-source=action]")
    expect(line).to_have_attribute("data-kind", "error", timeout=10_000)
    expect(line).to_contain_text(f"POST {path}: {status} ", timeout=10_000)
    if dismiss:
        line.click()
        expect(line).to_have_count(0)


def action_message(page, kind):
    """The text of the message area's line about the last action, once it is of `kind` (ok or error)."""
    line = page.locator("#message [data-source=action]")
    expect(line).to_be_visible(timeout=10_000)
    expect(line).to_have_attribute("data-kind", kind, timeout=10_000)
    return line.text_content()


# ------------------------------------------------------------------ tests

def test_coverage_map_shows_every_node_and_every_layer(page, cluster, url):
    nodes = cluster.info["nodes"]
    assert [n["id"] for n in nodes] == ["head", "shard-0", "shard-0-r1", "shard-1", "shard-1-r1", "shard-2",
                                       "shard-2-r1"]
    assert api(url, "cluster")["n_layers"] == 30
    rows = page.locator("#coverage g[data-node]")
    expect(rows).to_have_count(len(nodes))
    for n in nodes:
        row = page.locator(f'#coverage g[data-node="{n["id"]}"]')
        expect(row).to_have_attribute("data-state", "ok")
        layers = sorted(int(x) for x in row.locator("rect[data-layer]").evaluate_all(
            "cells => cells.map(c => c.dataset.layer)"))
        assert layers == (list(range(*n["layers"])) if n["role"] == "shard" else []), n
        assert n["role"] == "head" or n["layers"] in SPANS
    replicas = page.locator("#coverage [data-layer-replicas]")
    expect(replicas).to_have_count(30)
    assert replicas.evaluate_all("cells => cells.map(c => c.dataset.replicas)") == ["2"] * 30
    expect(page.locator("#coverage .gap")).to_have_count(0)
    # The node table: one row per node, each healthy, drain buttons on shards only.
    for n in nodes:
        row = page.locator(f'#nodes tr[data-node="{n["id"]}"]')
        expect(row).to_have_attribute("data-state", "ok")
        expect(row.locator("button[data-action=drain]")).to_have_count(1 if n["role"] == "shard" else 0)
    expect(page.locator("#summary")).to_have_attribute("data-route-ready", "true")
    expect(page.locator("#charts svg[data-series]")).to_have_count(5)
    expect(page.locator("#message")).to_be_hidden()
    screenshot(page, "01-coverage")


def test_a_stopped_shard_turns_unhealthy_within_the_ttl_and_back_after_sigcont(page, cluster, url):
    ttl = api(url, "cluster").get("heartbeat_ttl_s", TTL_S)
    victim = node_info(cluster, "shard-1-r1")
    row = page.locator('#nodes tr[data-node="shard-1-r1"]')
    expect(row).to_have_attribute("data-state", "ok")
    os.kill(victim["pid"], signal.SIGSTOP)
    try:
        t0 = time.time()
        expect(row).not_to_have_attribute("data-state", "ok", timeout=(ttl + SLACK_S) * 1000)
        print(f"\nshard-1-r1 shown {row.get_attribute('data-state')} {time.time() - t0:.1f} s after SIGSTOP")
        assert row.get_attribute("data-state") in ("trouble", "stale")
        expect(page.locator('#coverage g[data-node="shard-1-r1"]')).not_to_have_attribute("data-state", "ok")
        # Its layers have one live node left; the others keep two.
        expect(page.locator('#coverage [data-layer-replicas="15"]')).to_have_attribute("data-replicas", "1")
        expect(page.locator('#coverage [data-layer-replicas="5"]')).to_have_attribute("data-replicas", "2")
        screenshot(page, "02-shard-stopped")
    finally:
        os.kill(victim["pid"], signal.SIGCONT)
    expect(row).to_have_attribute("data-state", "ok", timeout=60_000)
    expect(page.locator('#coverage [data-layer-replicas="15"]')).to_have_attribute("data-replicas", "2",
                                                                                   timeout=10_000)


def test_a_running_job_progresses_finishes_and_its_waterfall_shows_every_hop(page, cluster, jobs):
    job = jobs(cluster, 300)
    job.wait_running(page, tokens_at_least=3)
    row = job.row(page)
    expect(row).to_have_attribute("data-max-tokens", "300")
    first = int(row.get_attribute("data-tokens"))
    wait_for("its progress to move", lambda: int(row.get_attribute("data-tokens")) > first, timeout=30)

    # Its session's waterfall: every step crosses the embedding, the three
    # shards of its route (layers 0-10, 10-20, 20-30, in ring order), the LM
    # head and the sampler.
    row.locator("td").first.click()
    expect(row).to_have_class(re.compile(r"\bselected\b"))
    session = row.get_attribute("data-session")
    assert session, "a running job has a session"
    expect(page.locator("#waterfall")).to_have_attribute("data-session", session)
    expect(page.locator("#waterfall g[data-step]").first).to_be_attached(timeout=10_000)
    route = shards_of(cluster, row.get_attribute("data-route"))
    assert [node_info(cluster, n)["layers"] for n in route] == SPANS, route
    steps = page.locator("#waterfall g[data-step]").evaluate_all("""steps => steps.map(g => ({
        step: +g.dataset.step,
        hops: [...g.querySelectorAll('rect[data-hop]')].map(
            r => [r.dataset.hop, r.dataset.stage, r.dataset.part])}))""")
    assert steps and [s["step"] for s in steps] == sorted(s["step"] for s in steps)
    for s in steps:
        computes = [(hop, stage) for hop, stage, part in s["hops"] if part == "compute"]
        shards = [hop for hop, stage in computes if node_info(cluster, hop).get("role") == "shard"]
        assert shards == route, s
        stages = {stage for _, stage in computes}
        assert {"embedding", "lm_head", "sampler"} <= stages, s
        assert ["network", "network", "network"] in s["hops"], s
    screenshot(page, "03-job-running")

    status, got, err = job.finish()
    assert status == 0 and len(got) == 300, err
    # Finished: it leaves the live list, or stays there as completed.
    wait_for("the finished job to leave the live list", lambda: row.count() == 0
             or row.get_attribute("data-state") == "completed", timeout=10)
    if row.count():
        expect(row.locator("button[data-action=cancel]")).to_be_hidden()
    screenshot(page, "04-job-finished")


def test_cancel_and_drain_are_refused_without_the_admin_key(page, cluster, url, jobs):
    job = jobs(cluster, 1000)
    job.wait_running(page)
    node = page.locator('#nodes tr[data-node="shard-0-r1"]')
    for key, status in (("", "401"), ("sk-not-the-admin-key", "401")):
        page.fill("#admin-key", key)
        refused(page, job.row(page).locator("button[data-action=cancel]"), f"/api/v1/jobs/{job.id}/cancel", status)
        refused(page, node.locator("button[data-action=drain]"), "/api/v1/nodes/shard-0-r1/drain", status,
                dismiss=key == "")
    screenshot(page, "05-refused")
    # Nothing happened: the job runs on, the node stays.
    before = int(job.row(page).get_attribute("data-tokens"))
    time.sleep(2)
    assert {n["id"]: n["state"] for n in api(url, "nodes")["nodes"]}["shard-0-r1"] == "ok"
    states = {j["job_id"]: j for j in api(url, "jobs")["jobs"]}
    assert states[job.id]["state"] == "running" and states[job.id]["tokens"] > before, states[job.id]
    assert job.proc.poll() is None
    # Done with it (the job endpoint needs no admin key).
    p = run("job", "cancel", "--endpoint", cluster.endpoint, job.id)
    assert p.returncode == 0, p.stderr
    job.finish(timeout=60)


def test_cancel_works_with_the_admin_key(page, cluster, jobs):
    page.fill("#admin-key", ADMIN_KEY)
    page.reload()  # the key stays for the tab (sessionStorage)
    expect(page.locator("#admin-key")).to_have_value(ADMIN_KEY)
    job = jobs(cluster, 2000)
    job.wait_running(page)
    job.row(page).locator("button[data-action=cancel]").click()
    text = action_message(page, "ok")
    assert job.id in text, text
    wait_for("the cancelled job to leave the live list", lambda: job.row(page).count() == 0
             or job.row(page).get_attribute("data-state") == "aborted", timeout=15)
    status, got, err = job.finish(timeout=60)
    assert len(got) < 2000, "the cancelled job ran to the end"
    screenshot(page, "06-cancelled")


def test_drain_works_with_the_admin_key(page, cluster, url, jobs):
    page.fill("#admin-key", ADMIN_KEY)
    job = jobs(cluster, 200)
    job.wait_running(page, tokens_at_least=5)
    victim = shards_of(cluster, job.row(page).get_attribute("data-route"))[1]  # the job's layers 10-20
    assert node_info(cluster, victim)["layers"] == [10, 20]
    page.locator(f'#nodes tr[data-node="{victim}"] button[data-action=drain]').click()
    text = action_message(page, "ok")
    assert victim in text, text
    answer = requests.get(url + "api/v1/nodes", timeout=10).json()["nodes"]
    assert {n["id"]: n["state"] for n in answer}.get(victim, "draining") == "draining"
    # The page shows it draining (or, once its session moved, gone); its
    # layers keep one live node, and the job moves there without a lost token.
    row = page.locator(f'#nodes tr[data-node="{victim}"]')
    wait_for(f"{victim} to show draining or lost", lambda: row.get_attribute("data-state") == "lost"
             or row.get_attribute("data-state") == "draining", timeout=10)
    expect(page.locator('#coverage [data-layer-replicas="15"]')).to_have_attribute("data-replicas", "1",
                                                                                   timeout=10_000)
    screenshot(page, "07-draining")
    status, got, err = job.finish()
    assert status == 0 and len(got) == 200, err
    wait_for(f"{victim} to leave", lambda: not alive(node_info(cluster, victim)["pid"]), timeout=60)
    # Gone from the registry, it stays listed a while as lost (drained), its drain button off.
    expect(row).to_have_attribute("data-state", "lost", timeout=30_000)
    expect(row.locator("button[data-action=drain]")).to_be_disabled()
    screenshot(page, "08-drained")
