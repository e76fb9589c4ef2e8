"""deploy/systemd: the units pass `systemd-analyze verify` (with the binary
path pointed at build/bin/troupe, since /usr/local/bin/troupe is where an
install puts it, not this checkout), and the env files they read, laid over
the node configs they start, pass `troupe config check`."""
import os
import shutil
import subprocess

import pytest

from conftest import ROOT, TROUPE_BIN
from hand_cluster import troupe

UNITS = ROOT / "deploy" / "systemd"


def test_the_units_pass_systemd_analyze_verify(tmp_path):
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is missing: run scripts/setup.sh --with-test-deps"
    units = []
    for unit in sorted(UNITS.glob("*.service")):
        text = unit.read_text().replace("/usr/local/bin/troupe", str(TROUPE_BIN))
        name = unit.name.replace("@.service", "@shard-0.service")  # a template is verified as an instance
        (tmp_path / name).write_text(text)
        units.append(tmp_path / name)
    assert [u.name for u in units] == ["troupe-head.service", "troupe-shard@shard-0.service"]
    p = subprocess.run([analyze, "verify", "--man=no", *map(str, units)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not p.stderr.strip(), p.stderr
    # It does check: a bad value is said, a missing binary fails.
    (tmp_path / "bad.service").write_text(units[0].read_text().replace("Restart=on-failure", "Restart=sometimes"))
    p = subprocess.run([analyze, "verify", "--man=no", str(tmp_path / "bad.service")], capture_output=True, text=True)
    assert "Failed to parse service restart specifier" in p.stderr, p.stderr
    (tmp_path / "gone.service").write_text(units[0].read_text().replace(str(TROUPE_BIN), "/nowhere/troupe"))
    p = subprocess.run([analyze, "verify", "--man=no", str(tmp_path / "gone.service")], capture_output=True, text=True)
    assert p.returncode != 0 and "/nowhere/troupe" in p.stderr, p.stderr


def env_file(path):
    env = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            k, v = line.split("=", 1)
            env[k] = v
    return env


def test_the_env_files_complete_the_node_configs():
    head = env_file(UNITS / "head.env")
    shard = {**env_file(UNITS / "shard.env"), "TROUPE_NODE_ID": "shard-0"}  # what %i sets
    for config, env in (("head.yaml", head), ("shard.yaml", shard)):
        p = troupe("config", "check", ROOT / "deploy" / "config" / config, env={**os.environ, **env})
        assert p.returncode == 0, config + ": " + p.stdout + p.stderr
    # The address the shards dial is the one the head advertises.
    assert shard["TROUPE_HEAD_HOST"] == head["TROUPE_ADVERTISE_HOST"]
