"""deploy/helm/troupe: `helm template` renders it with real CURVE keys, and
every rendered object validates against the Kubernetes schema (the JSON
schemas kubernetes-validate bundles, strict: unknown fields are errors; no
network). Then what the chart promises: the head's probes on /health and its
HTTP port, shards with --layers auto started one by one, a PodDisruptionBudget
that never lets a span lose its last replica, memory derived from the model
size, the GPU node selector, and node configs (the ConfigMap holds
deploy/config's files) that `troupe config check --files` passes with each
pod's environment and the keys the init container lays out.

helm comes from scripts/setup.sh --with-test-deps (.deps/bin/helm, built from
its Go module)."""
import json
import os
import pathlib
import shutil
import subprocess

import pytest
import yaml

from conftest import DEFAULT_MODEL, ROOT
from hand_cluster import troupe

CHART = ROOT / "deploy" / "helm" / "troupe"
K8S_VERSION = "1.30.0"


def helm_bin():
    for candidate in (ROOT / ".deps" / "bin" / "helm", shutil.which("helm")):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    pytest.fail("helm is missing: run scripts/setup.sh --with-test-deps (it builds helm into .deps/bin)")


def keys(tmp, name):
    d = tmp / "keys" / name
    p = troupe("keys", "generate", "--out", d)
    assert p.returncode == 0, p.stderr
    text = (d / "node.key").read_text()
    get = lambda k: next(l.split("=", 1)[1].strip() for l in text.splitlines() if l.startswith(k))
    return {"publicKey": get("public-key"), "secretKey": get("secret-key")}


def render(tmp, *sets):
    values = {"curve": {"head": keys(tmp, "head"), "shard": keys(tmp, "shard"),
                        "clients": [keys(tmp, "client")["publicKey"]]},
              "apiKeys": {"lines": ["ops sk-0123456789abcdef role=admin"]}}
    f = tmp / "values.yaml"
    f.write_text(yaml.safe_dump(values))
    args = [helm_bin(), "template", "t1", str(CHART), "--namespace", "llm", "-f", str(f)]
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return [d for d in yaml.safe_load_all(p.stdout) if d], values


def by_kind(objects, kind, suffix=""):
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"].endswith(suffix)]
    assert len(found) == 1, [o["metadata"]["name"] for o in objects if o["kind"] == kind]
    return found[0]


def test_the_chart_renders_and_every_object_validates(tmp_path):
    import kubernetes_validate
    objects, _ = render(tmp_path)
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == ["ConfigMap", "Deployment", "PodDisruptionBudget", "Secret", "Secret", "Service", "Service",
                     "Service", "StatefulSet"], kinds
    for o in objects:
        try:
            kubernetes_validate.validate(o, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as e:
            pytest.fail(f"{o['kind']} {o['metadata']['name']}: {e.message} at {list(e.path)}")
    # The schema check is no formality: a misspelt field fails it.
    bad = json.loads(json.dumps(by_kind(objects, "Deployment")))
    bad["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def test_probes_layers_auto_and_the_disruption_budget(tmp_path):
    objects, _ = render(tmp_path)
    head = by_kind(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert head["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert head["livenessProbe"]["tcpSocket"] == {"port": "http"}
    sts = by_kind(objects, "StatefulSet")["spec"]
    assert sts["podManagementPolicy"] == "OrderedReady"
    shard = sts["template"]["spec"]["containers"][0]
    assert shard["args"] == ["node", "--config", "/etc/troupe/shard.yaml", "--layers", "auto"]
    assert shard["readinessProbe"]["tcpSocket"] == {"port": "nodes"}
    services = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "Service"}
    assert {p["name"] for p in services["t1-head"]["ports"]} == {"jobs", "http"}
    assert services["t1-head-nodes"]["publishNotReadyAddresses"] is True  # shards join a head not ready yet
    assert by_kind(objects, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 0  # one replica per span
    objects, _ = render(tmp_path / "r", "shards.replicas=6", "shards.replicasPerSpan=2")
    assert by_kind(objects, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1


def memory_mib(container):
    limit = container["resources"]["limits"]["memory"]
    assert limit.endswith("Mi")
    return int(limit[:-2])


def test_resources_follow_the_model_size_and_gpus_are_optional(tmp_path):
    objects, _ = render(tmp_path / "a")
    small = memory_mib(by_kind(objects, "StatefulSet")["spec"]["template"]["spec"]["containers"][0])
    assert "nodeSelector" not in by_kind(objects, "StatefulSet")["spec"]["template"]["spec"]
    objects, _ = render(tmp_path / "b", "model.sizeMiB=13000", "model.layers=32", "gpu.enabled=true")
    pod = by_kind(objects, "StatefulSet")["spec"]["template"]["spec"]
    big = memory_mib(pod["containers"][0])
    # 3 spans of a 13000 MiB model: a third of it (x1.5 for uneven spans), cache and overhead.
    assert big == (13000 + 2) // 3 * 3 // 2 + 256 + 384, big
    assert big > small
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["TROUPE_DEVICE"] == "cuda:0" and env["TROUPE_MEMORY_MB"] == str(big - 384)
    head = by_kind(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert memory_mib(head) == 13000 + 512


def test_the_node_configs_pass_config_check_as_each_pod_sees_them(tmp_path):
    objects, values = render(tmp_path)
    config = by_kind(objects, "ConfigMap")["data"]
    assert config["head.yaml"] == (ROOT / "deploy" / "config" / "head.yaml").read_text()
    assert config["shard.yaml"] == (ROOT / "deploy" / "config" / "shard.yaml").read_text()
    etc = tmp_path / "etc"
    etc.mkdir()
    for name, text in config.items():
        (etc / name).write_text(text)
    secret = by_kind(objects, "Secret", "-curve")["stringData"]
    for kind, pod_spec, node_id in (("Deployment", None, "head"), ("StatefulSet", None, "t1-shard-0")):
        spec = by_kind(objects, kind)["spec"]["template"]["spec"]
        # The init container's layout, from the Secret.
        k = tmp_path / f"keys-{node_id}"
        role = "head" if kind == "Deployment" else "shard"
        for path, key, mode in ((f"{node_id}/node.key", f"{role}.key", 0o600), (f"{node_id}/node.pub", f"{role}.pub", 0o644),
                                ("head/node.pub", "head.pub", 0o644), ("allowlist/head.pub", "head.pub", 0o644),
                                ("allowlist/shard.pub", "shard.pub", 0o644), ("clients/clients.pub", "clients.pub", 0o644)):
            (k / path).parent.mkdir(parents=True, exist_ok=True)
            (k / path).write_text(secret[key])
            os.chmod(k / path, mode)
        assert "install -m 600 /secrets/curve/%s.key" % role in spec["initContainers"][0]["args"][0]
        env = {"POD_NAME": node_id}
        for e in spec["containers"][0]["env"]:
            if "value" in e:
                env[e["name"]] = e["value"].replace("$(POD_NAME)", node_id)
        env["TROUPE_KEYS"] = str(k)
        env["TROUPE_MODEL"] = str(DEFAULT_MODEL)  # the image's /models
        env["TROUPE_STATE"] = str(tmp_path)
        if role == "head":
            (k / "api_keys.txt").write_text("ops sk-0123456789abcdef role=admin\n")
        p = troupe("config", "check", "--files", etc / f"{role}.yaml", env={**os.environ, **env})
        assert p.returncode == 0, f"{node_id}: {p.stdout}{p.stderr}"


def test_helm_lint_passes_and_missing_keys_are_named(tmp_path):
    render(tmp_path)  # writes tmp_path/values.yaml with real keys
    p = subprocess.run([helm_bin(), "lint", str(CHART), "-f", str(tmp_path / "values.yaml")], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and "0 chart(s) failed" in p.stdout, p.stdout + p.stderr
    p = subprocess.run([helm_bin(), "template", "t1", str(CHART)], capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "curve.head and curve.shard need publicKey and secretKey" in p.stderr, p.stderr

