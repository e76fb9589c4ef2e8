"""The job protocol on the client side, without I/O (both clients share it).

Framing: every message is one ZeroMQ frame, an ``Envelope``
(messages/troupe.proto) stamped with ``PROTOCOL_VERSION``; the head's ROUTER
answers each request with envelopes carrying the request's ``request_id``.

A job's answer to a JobSubmit (``stream`` set) or a JobAttach::

    JobStatus            accepted (RUNNING), or the attached job's state
    JobStatus QUEUED*    while it waits for KV cache
    PromptLogprobs?      when the job asked for them
    Token*               index 0, 1, ... (beam search: one per returned sequence)
    Finish | Error       the end

:class:`JobRun` is the state of one job's stream across attempts: fed the
envelopes of an attempt, it returns what to give the caller; :meth:`restart`
begins a new attempt (the same job re-sent after a lost connection or a
timeout), whose replayed tokens it checks against those already given and
skips.
"""
from __future__ import annotations

import secrets
from typing import List, Optional, Tuple, Union

from . import troupe_pb2 as pb
from .errors import StreamMismatchError, TroupeError, UnavailableError, error_from_proto
from .types import JobStatus, PromptToken, Result, Sequence, Timings, Token, Usage, finish_reason_name

PROTOCOL_VERSION = 1  # messages/protocol.h kProtocolVersion
MAX_ENVELOPE_BYTES = 4 << 20  # messages/protocol.h DecodeLimits.max_header_bytes

Event = Tuple[str, object]  # ("token", Token) | ("status", JobStatus) | ("done", Result)


class RequestIds:
    """Request ids from a random start (ids of two clients rarely meet)."""

    def __init__(self) -> None:
        self._next = (secrets.randbits(32) << 20) | 1

    def take(self) -> int:
        rid = self._next
        self._next += 1
        return rid


def envelope(request_id: int, **body: object) -> bytes:
    """One request frame: an Envelope with `body` (e.g. job_submit=...)."""
    env = pb.Envelope(protocol_version=PROTOCOL_VERSION, request_id=request_id)
    for name, value in body.items():
        getattr(env, name).CopyFrom(value)
    return env.SerializeToString()


def decode(frames: List[bytes], endpoint: str) -> pb.Envelope:
    """The Envelope of an answer; TroupeError when it is not one."""
    if not frames or len(frames[0]) > MAX_ENVELOPE_BYTES:
        raise TroupeError(f"bad answer from {endpoint}: empty or oversized", code="BAD_HEADER")
    env = pb.Envelope()
    try:
        env.ParseFromString(frames[0])
    except Exception as e:  # DecodeError, and RuntimeWarning-free on every runtime
        raise TroupeError(f"bad answer from {endpoint}: {e}", code="BAD_HEADER") from None
    if env.protocol_version != PROTOCOL_VERSION:
        raise TroupeError(
            f"{endpoint} speaks protocol version {env.protocol_version}, this client {PROTOCOL_VERSION}",
            code="VERSION_MISMATCH",
        )
    return env


def should_retry(error: BaseException) -> bool:
    """Whether a job is re-sent after `error`: the head did not answer (a
    lost connection or a timeout: ``retryable`` TimeoutError from this
    client), or it said the same request may succeed later — except BUSY and
    CACHE_FULL, which the caller should see."""
    if not isinstance(error, TroupeError) or not error.retryable:
        return False
    if error.code in ("BUSY", "CACHE_FULL"):
        return False
    return error.node_id == "" or isinstance(error, UnavailableError)


class JobRun:
    """One job's stream, across attempts."""

    def __init__(self, request: Union["pb.JobSubmit", "pb.JobAttach"]) -> None:
        self.submit = request if isinstance(request, pb.JobSubmit) else None
        self.attach = request if isinstance(request, pb.JobAttach) else None
        self.job_id = request.job_id
        self.from_index = self.attach.from_index if self.attach is not None else 0
        self.tokens: List[Token] = []  # given to the caller, in order
        self.prompt_logprobs: Optional[List[PromptToken]] = None
        self.status: Optional[JobStatus] = None
        self.accepted = False
        self.result: Optional[Result] = None
        self.attempts = 0
        self._due = self.from_index  # the index the next Token must carry

    # ------------------------------------------------------------ requests

    def request(self, request_id: int) -> bytes:
        """The frame that (re)starts this job's stream."""
        self.attempts += 1
        if self.submit is not None:
            return envelope(request_id, job_submit=self.submit)
        # Attached: ask only for the tokens not given yet.
        attach = pb.JobAttach(job_id=self.job_id, stream=True, from_index=self.from_index + len(self.tokens))
        return envelope(request_id, job_attach=attach)

    def restart(self) -> None:
        """A new attempt: a re-sent JobSubmit replays the stream from token 0
        (the head answers a job id it knows with that job's stream from the
        start); a JobAttach asks from the first token not given yet."""
        self.accepted = False
        self._due = 0 if self.submit is not None else self.from_index + len(self.tokens)

    # ------------------------------------------------------------ answers

    def feed(self, env: pb.Envelope) -> List[Event]:
        """What `env` (an answer to this attempt) gives the caller; raises
        the job's error (a TroupeError) when it ends with one."""
        body = env.WhichOneof("body")
        if body == "job_status":
            status = JobStatus.from_proto(env.job_status)
            if status.job_id:
                self.job_id = status.job_id
            self.accepted = True
            self.status = status
            return [("status", status)]
        if body == "token":
            token = self._token(env.token)
            return [("token", token)] if token is not None else []
        if body == "prompt_logprobs":
            self.prompt_logprobs = [PromptToken.from_proto(t) for t in env.prompt_logprobs.tokens]
            return []
        if body == "finish":
            self.accepted = True
            self.result = self._result(env.finish)
            return [("done", self.result)]
        if body == "error":
            error = error_from_proto(env.error)
            if error.job_id is None and self.job_id:
                error.job_id = self.job_id
            raise error
        return []  # an answer this client does not use

    def _token(self, t: "pb.Token") -> Optional[Token]:
        if t.index != self._due:
            raise StreamMismatchError(
                f"token {t.index} of job {self.job_id} arrived where token {self._due} was due", job_id=self.job_id
            )
        self._due += 1
        token = Token.from_proto(t)
        position = t.index - self.from_index
        if position < len(self.tokens):  # replayed after a retry: already given
            given = self.tokens[position]
            if (given.token_id, given.text, given.sequence) != (token.token_id, token.text, token.sequence):
                raise StreamMismatchError(
                    f"job {self.job_id} re-sent replayed token {t.index} as {token.token_id} {token.text!r}, "
                    f"not the {given.token_id} {given.text!r} given before (an unseeded sampled job run twice?)",
                    job_id=self.job_id,
                )
            return None
        self.tokens.append(token)
        return token

    def _result(self, f: "pb.Finish") -> Result:
        sequences = [t.sequence for t in self.tokens if t.sequence is not None]
        wants_logprobs = (
            self.submit.sampling.HasField("top_logprobs") and self.submit.sampling.top_logprobs >= 0
            if self.submit is not None
            else any(t.logprob is not None for t in self.tokens)
        )
        best: Optional[Sequence] = sequences[0] if sequences else None
        # The answer, as `troupe submit --json` prints it: an eos token that
        # flushed no text is the end marker, not part of it.
        answer = [t for t in self.tokens if not (t.eos and not t.text)]
        return Result(
            job_id=f.job_id or self.job_id,
            text=best.text if best else "".join(t.text for t in answer),
            tokens=list(best.tokens) if best else [t.token_id for t in answer],
            finish_reason=finish_reason_name(f.reason) or "unspecified",
            usage=Usage(f.prompt_tokens, f.generated_tokens, f.cached_tokens),
            timings=Timings(
                queue_seconds=f.queue_seconds,
                first_token_seconds=f.first_token_seconds,
                decode_seconds=f.decode_seconds,
                total_seconds=f.total_seconds,
                decode_steps=f.decode_steps,
                replays=f.replays,
                peak_rss_mb=f.peak_rss_mb,
            ),
            logprobs=answer if wants_logprobs and not sequences else None,
            prompt_logprobs=self.prompt_logprobs,
            sequences=sequences,
        )
