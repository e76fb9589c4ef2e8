"""The committed troupe_pb2.py is the schema of messages/troupe.proto, and the
pure parts of the SDK (options, keys, errors) map values as documented."""
import builtins
import pathlib
import shutil
import subprocess

import pytest
from google.protobuf import descriptor_pb2

from conftest import ROOT, run

from troupe_client import BadRequestError, BusyError, KeyPair, TimeoutError, TroupeError, troupe_pb2 as pb
from troupe_client._protocol import PROTOCOL_VERSION, decode
from troupe_client.errors import error_from_proto
from troupe_client.keys import client_keys_of, is_loopback, server_key_of
from troupe_client.options import job_submit, sampling_params

PROTO = ROOT / "messages" / "troupe.proto"


def _drop_json_names(messages):
    for m in messages:
        for f in m.field:
            f.ClearField("json_name")
        _drop_json_names(m.nested_type)


def test_generated_module_matches_messages_troupe_proto(tmp_path):
    protoc = shutil.which("protoc")
    assert protoc, "protoc is missing (Debian: protobuf-compiler, installed by scripts/setup.sh)"
    out = tmp_path / "troupe.desc"
    subprocess.run([protoc, f"-I{PROTO.parent}", f"--descriptor_set_out={out}", PROTO.name], check=True)
    current = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file[0]
    _drop_json_names(current.message_type)  # protoc leaves them out of generated Python
    committed = descriptor_pb2.FileDescriptorProto.FromString(pb.DESCRIPTOR.serialized_pb)
    assert committed == current, (
        "clients/python/src/troupe_client/troupe_pb2.py is stale against messages/troupe.proto: "
        "run clients/python/scripts/generate_proto.sh")
    # Its type stub, as the same protoc writes it.
    subprocess.run([protoc, f"-I{PROTO.parent}", f"--pyi_out={tmp_path}", PROTO.name], check=True)
    stub = pathlib.Path(pb.__file__).with_suffix(".pyi")
    assert stub.read_text() == (tmp_path / "troupe_pb2.pyi").read_text(), (
        "troupe_pb2.pyi is stale: run clients/python/scripts/generate_proto.sh")


def test_protocol_version_is_the_heads():
    text = (ROOT / "messages" / "protocol.h").read_text()
    assert f"constexpr uint32_t kProtocolVersion = {PROTOCOL_VERSION};" in text
    other = pb.Envelope(protocol_version=PROTOCOL_VERSION + 1, request_id=1)
    other.error.code = pb.INTERNAL
    with pytest.raises(TroupeError, match="protocol version") as e:
        decode([other.SerializeToString()], "tcp://x:1")
    assert e.value.code == "VERSION_MISMATCH"


def test_options_map_to_sampling_params():
    p = sampling_params(dict(temperature=0.5, top_k=3, stop="x", logprobs=True, logit_bias={7: -1.5},
                             early_stopping="never", num_beams=2, seed=2**63 + 5))
    assert p.temperature == 0.5 and p.top_k == 3 and list(p.stop) == ["x"] and p.top_logprobs == 0
    assert dict(p.logit_bias) == {7: -1.5} and p.early_stopping == pb.EARLY_STOPPING_NEVER and p.seed == 2**63 + 5
    assert not p.HasField("top_p") and not p.HasField("max_tokens")  # unset: the head's default
    assert sampling_params(dict(logprobs=4)).top_logprobs == 4
    assert not sampling_params(dict(logprobs=False)).HasField("top_logprobs")
    with pytest.raises(TypeError):
        sampling_params(dict(temprature=1))
    with pytest.raises(BadRequestError, match="early_stopping"):
        sampling_params(dict(early_stopping="sometimes"))
    job = job_submit(job_id=9, prompt=[1, 2, 3], priority=-2, options={})
    assert list(job.prompt_tokens) == [1, 2, 3] and job.priority == -2 and job.stream and job.job_id == 9


def test_errors_from_the_wire_are_typed():
    busy = error_from_proto(pb.Error(code=pb.BUSY, text="full", retryable=True, queue_depth=16,
                                     retry_after_seconds=2.5, node_id="head", job_id=3))
    assert isinstance(busy, BusyError) and busy.code == "BUSY" and busy.queue_depth == 16
    assert busy.retry_after == 2.5 and busy.retryable and busy.job_id == 3 and str(busy) == "BUSY: full"
    t = error_from_proto(pb.Error(code=pb.TIMEOUT, text="slow"))
    assert isinstance(t, TimeoutError) and isinstance(t, builtins.TimeoutError)
    for code in pb.ErrorCode.values():
        if code:
            assert error_from_proto(pb.Error(code=code)).code == pb.ErrorCode.Name(code)


def test_key_files_and_loopback(tmp_path):
    assert run("keys", "generate", "--out", tmp_path / "k").returncode == 0
    pair = client_keys_of(tmp_path / "k" / "node.key")
    assert server_key_of(tmp_path / "k" / "node.pub") == pair.public_key
    assert server_key_of(pair.public_key) == pair.public_key
    assert isinstance(client_keys_of(None), KeyPair)
    with pytest.raises(BadRequestError, match="secret-key"):
        client_keys_of(tmp_path / "k" / "node.pub")
    assert is_loopback("tcp://127.0.0.1:5") and is_loopback("tcp://localhost:5") and is_loopback("tcp://[::1]:5")
    assert not is_loopback("tcp://192.0.2.2:5") and not is_loopback("tcp://*:5") and not is_loopback("tcp://0.0.0.0:5")
