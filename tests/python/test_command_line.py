"""The command line's two binaries (app/engine_commands.h): `troupe`, the
front, loads no libtorch; `generate`, `score`, `node` and `devices` go to
`troupe-engine` beside it with the same arguments; a front without its engine
says so and still runs the client commands."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import TROUPE_BIN

ENGINE = TROUPE_BIN.parent / "troupe-engine"
ENGINE_COMMANDS = ["generate", "score", "node", "devices"]


def run(binary, *args, env=None, timeout=120):
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def loaded_libraries(binary):
    """What the dynamic loader maps for `binary` (ldd's own way: the loader
    lists and exits, running nothing)."""
    p = run(binary, env={"LD_TRACE_LOADED_OBJECTS": "1"})
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_the_front_loads_no_libtorch_and_the_engine_does():
    assert ENGINE.exists(), f"{ENGINE} is missing: build it (ninja -C build)"
    front = loaded_libraries(TROUPE_BIN)
    assert "libc.so" in front  # the trace did list the libraries
    assert "libtorch" not in front, front
    assert "libtorch" in loaded_libraries(ENGINE)


def test_help_lists_every_command():
    p = run(TROUPE_BIN, "--help")
    assert p.returncode == 0, p.stderr
    for command in [*ENGINE_COMMANDS, "tokenize", "chat-template", "keys", "cluster", "submit", "status",
                    "session", "job", "bridge", "admin", "config"]:
        assert f"\n  {command} " in p.stdout, (command, p.stdout)
    assert "Generate text with the whole model in this process" in p.stdout


@pytest.mark.parametrize("command", ENGINE_COMMANDS)
def test_an_engine_command_runs_in_the_engine_under_the_fronts_name(command):
    p = run(TROUPE_BIN, command, "--help")
    assert p.returncode == 0, p.stderr
    # The engine parsed it (its flags), and the usage line names what the user ran.
    assert f"Usage: {TROUPE_BIN} {command}" in p.stdout, p.stdout
    if command in ("generate", "score", "node"):
        assert "--backend" in p.stdout


def test_devices_through_the_front():
    p = run(TROUPE_BIN, "devices", "--json")
    assert p.returncode == 0, p.stderr
    assert {"name": "cpu"} in json.loads(p.stdout)["devices"], p.stdout


def test_the_engine_is_found_beside_the_file_a_symlink_points_at(tmp_path):
    # An install that links /usr/local/bin/troupe to the build.
    link = tmp_path / "troupe"
    link.symlink_to(TROUPE_BIN)
    p = run(link, "generate", "--help")
    assert p.returncode == 0 and "--max-tokens" in p.stdout, p.stderr


def test_a_front_without_its_engine_says_so_and_keeps_its_own_commands(tmp_path):
    alone = tmp_path / "troupe"
    shutil.copy(TROUPE_BIN, alone)
    p = run(alone, "generate", "--prompt", "hi")
    assert p.returncode == 127, (p.returncode, p.stderr)
    assert f"generate runs in troupe-engine, not found beside this binary at {tmp_path}/troupe-engine" in p.stderr
    p = run(alone, "cluster", "up", "--shards", "1", "--dir", tmp_path / "c")
    assert p.returncode == 1 and f"{tmp_path}/troupe-engine, which is not there" in p.stderr, p.stderr
    assert not (tmp_path / "c" / "cluster.json").exists()
    # A client command needs no engine.
    p = run(alone, "keys", "generate", "--out", tmp_path / "keys")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "keys" / "node.key").exists() and (tmp_path / "keys" / "node.pub").exists()
