"""`python -m build` makes a wheel of troupe-client; installed into a fresh
virtual environment (pyzmq and protobuf its only dependencies, no torch), it
talks to the cluster and answers as this checkout's SDK does."""
import json
import pathlib
import shutil
import subprocess
import sys
import sysconfig

PACKAGE = pathlib.Path(__file__).resolve().parents[1]

SCRIPT = """
import json, pathlib, sys
import troupe_client
from troupe_client import Client
here = pathlib.Path(troupe_client.__file__).resolve()
assert pathlib.Path(sys.prefix).resolve() in here.parents, here  # the installed copy, not the checkout's
assert (here.parent / "py.typed").exists()
with Client.from_cluster(sys.argv[1]) as c:
    r = c.generate("The capital of France is", max_tokens=8)
print(json.dumps({"tokens": r.tokens, "text": r.text, "file": str(here)}))
"""


def _pip(venv, *args):
    return subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=600)


def test_a_wheel_installs_into_a_fresh_venv_and_works(cluster, client, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src, ignore=shutil.ignore_patterns("tests", "build", "dist", "*.egg-info", "__pycache__"))
    built = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir",
                            str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    wheels = list((tmp_path / "dist").glob("troupe_client-*-py3-none-any.whl"))
    assert len(wheels) == 1, built.stdout
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    installed = _pip(venv, "install", str(wheels[0]))
    if installed.returncode != 0:
        # No package index here: the wheel alone, its dependencies from this
        # interpreter's environment (the same pyzmq and protobuf).
        assert _pip(venv, "install", "--no-deps", str(wheels[0])).returncode == 0
        site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              capture_output=True, text=True, check=True).stdout.strip()
        pathlib.Path(site, "deps-from-test-env.pth").write_text(sysconfig.get_path("purelib") + "\n")
    listed = _pip(venv, "list", "--format", "json")
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "troupe-client" in names and "torch" not in names
    p = subprocess.run([str(venv / "bin" / "python"), "-c", SCRIPT, str(cluster.dir)], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    expected = client.generate("The capital of France is", max_tokens=8)
    assert out["tokens"] == expected.tokens and out["text"] == expected.text
