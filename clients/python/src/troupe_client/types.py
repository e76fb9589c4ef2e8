"""What the SDK returns: plain, immutable values built from the head's messages.

A job's answer arrives as :class:`Token` values (one per generated token, or
with beam search one per returned sequence) and ends in a :class:`Result`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from . import troupe_pb2 as pb
from .errors import TroupeError, error_from_proto

__all__ = [
    "TopLogprob",
    "Token",
    "PromptToken",
    "Sequence",
    "Usage",
    "Timings",
    "Result",
    "JobStatus",
    "KeptSession",
    "Metrics",
]

_FINISH = {pb.FINISH_EOS: "eos", pb.FINISH_STOP: "stop", pb.FINISH_LENGTH: "length"}
_STATE = {
    pb.JOB_QUEUED: "queued",
    pb.JOB_RUNNING: "running",
    pb.JOB_COMPLETED: "completed",
    pb.JOB_ABORTED: "aborted",
}


def finish_reason_name(reason: int) -> Optional[str]:
    """``"eos"``, ``"stop"``, ``"length"``, or None when unset."""
    return _FINISH.get(reason)  # type: ignore[call-overload]


@dataclass(frozen=True)
class TopLogprob:
    """One of the most likely tokens at a position."""

    token_id: int
    logprob: float
    bytes: bytes


@dataclass(frozen=True)
class Token:
    """One token of an answer, as it arrives.

    ``text`` is the newly complete text (always valid UTF-8; may be empty
    while a character spans tokens). ``logprob``, ``bytes`` and
    ``top_logprobs`` are set when the job asked for logprobs. With beam
    search there is one Token per returned sequence, best first: ``index`` is
    the sequence's number, ``token_id`` -1, ``text`` its whole text and
    ``sequence`` the sequence itself.
    """

    index: int
    token_id: int
    text: str
    eos: bool = False
    logprob: Optional[float] = None
    bytes: bytes = b""
    top_logprobs: Tuple[TopLogprob, ...] = ()
    sequence: Optional["Sequence"] = None

    @staticmethod
    def from_proto(t: "pb.Token") -> "Token":
        top = tuple(TopLogprob(a.token_id, a.logprob, a.token_bytes) for a in t.top_logprobs)
        seq = None
        if t.HasField("beam_sequence"):
            b = t.beam_sequence
            seq = Sequence(
                index=b.index,
                text=t.text,
                tokens=list(b.token_ids),
                score=b.score,
                finish_reason="eos" if t.eos else "length",
            )
        return Token(
            index=t.index,
            token_id=t.token_id,
            text=t.text,
            eos=t.eos,
            logprob=t.logprob if t.HasField("logprob") else None,
            bytes=t.token_bytes,
            top_logprobs=top,
            sequence=seq,
        )


@dataclass(frozen=True)
class PromptToken:
    """A prompt token with its logprob given the tokens before it (None for the first)."""

    token_id: int
    logprob: Optional[float]
    bytes: bytes
    top_logprobs: Tuple[TopLogprob, ...] = ()

    @staticmethod
    def from_proto(t: "pb.PromptToken") -> "PromptToken":
        top = tuple(TopLogprob(a.token_id, a.logprob, a.token_bytes) for a in t.top_logprobs)
        return PromptToken(t.token_id, t.logprob if t.HasField("logprob") else None, t.token_bytes, top)


@dataclass(frozen=True)
class Sequence:
    """One returned sequence of a beam search (tokens without the eos)."""

    index: int
    text: str
    tokens: List[int]
    score: float
    finish_reason: str


@dataclass(frozen=True)
class Usage:
    """Token counts, as OpenAI's ``usage``.

    ``prompt_tokens`` is the whole context before generating (in a kept
    session, the conversation so far plus this prompt); ``cached_tokens`` is
    what of it was reused from the shards' caches rather than prefilled.
    """

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Timings:
    """The head's record of the job."""

    queue_seconds: float
    first_token_seconds: float
    decode_seconds: float
    total_seconds: float
    decode_steps: int
    replays: int  # reroutes after a node died
    peak_rss_mb: float


@dataclass(frozen=True)
class Result:
    """A finished job.

    ``tokens`` and ``text`` are the answer as ``troupe submit --json``
    prints it: without the end marker (an eos token that flushed no text),
    which a stream still yields (``Token.eos``); with beam search they
    are the best sequence's and ``sequences`` holds every returned one, best
    first. ``logprobs`` holds one Token per generated token when the job
    asked for logprobs (aligned with ``tokens``), else None. A Result of :meth:`Client.attach` from a
    token index holds the tokens from that index on.
    """

    job_id: int
    text: str
    tokens: List[int]
    finish_reason: str
    usage: Usage
    timings: Timings
    logprobs: Optional[List[Token]] = None
    prompt_logprobs: Optional[List[PromptToken]] = None
    sequences: List[Sequence] = field(default_factory=list)


@dataclass(frozen=True)
class JobStatus:
    """Where a job stands (``JobStatus`` on the wire).

    ``state`` is ``"queued"`` (``queue_position`` queued jobs ahead, 0 =
    next), ``"running"``, ``"completed"`` (``finish_reason`` set) or
    ``"aborted"`` (``error`` is the exception it ended with). ``tokens`` is
    the count generated so far.
    """

    job_id: int
    state: str
    queue_position: int = 0
    tokens: int = 0
    priority: int = 0
    finish_reason: Optional[str] = None
    error: Optional[TroupeError] = None

    @staticmethod
    def from_proto(s: "pb.JobStatus") -> "JobStatus":
        return JobStatus(
            job_id=s.job_id,
            state=_STATE.get(s.state, "unspecified"),
            queue_position=s.queue_position,
            tokens=s.tokens,
            priority=s.priority,
            finish_reason=finish_reason_name(s.finish_reason),
            error=error_from_proto(s.failure) if s.HasField("failure") else None,
        )


@dataclass(frozen=True)
class KeptSession:
    """A live kept session on the head (``troupe session list``)."""

    name: str
    context_tokens: int
    max_length: int
    jobs: int
    running_job: Optional[int]
    idle_seconds: float
    expires_in_seconds: float
    route: List[str]

    @staticmethod
    def from_proto(s: "pb.KeptSession") -> "KeptSession":
        return KeptSession(
            name=s.name,
            context_tokens=s.context_tokens,
            max_length=s.max_length,
            jobs=s.jobs,
            running_job=s.running_job or None,
            idle_seconds=s.idle_seconds,
            expires_in_seconds=s.expires_in_seconds,
            route=list(s.route),
        )


@dataclass(frozen=True)
class Metrics:
    """The cluster's merged metrics, keyed ``"<node>/<name>"``."""

    node_id: str
    counters: Dict[str, int]
    gauges: Dict[str, float]

    @staticmethod
    def from_proto(m: "pb.MetricsSnapshot") -> "Metrics":
        return Metrics(m.node_id, dict(m.counters), dict(m.gauges))
