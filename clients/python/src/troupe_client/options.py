"""Generation options: Python keyword arguments -> a ``JobSubmit`` message.

Every option of ``SamplingParams`` (messages/troupe.proto) is a keyword of the
same name; an option left out takes the head's default (the C++
``SamplingParams`` defaults: greedy, 256 new tokens...). A few take Python
values::

    stop="x" or ["x", "y"]          stop strings
    logprobs=True | N               each token's logprob (N: with N alternatives, 0..20);
                                    top_logprobs=N is the same as logprobs=N
    prompt_logprobs=N               the prompt's logprobs (N alternatives each)
    logit_bias={id: bias}           token id -> bias
    early_stopping=True | False | "never"

Values are checked by the head (BadRequestError naming the field); unknown
keywords raise TypeError here.
"""
from __future__ import annotations

import secrets
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import troupe_pb2 as pb
from .errors import BadRequestError

__all__ = ["SAMPLING_OPTIONS", "new_job_id", "sampling_params", "job_submit", "chat_messages"]

# Keyword -> SamplingParams field, for those passed through unchanged.
_PLAIN = (
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "top_a",
    "repeat_penalty",
    "repeat_last_n",
    "min_tokens",
    "max_tokens",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "no_repeat_ngram_size",
    "contrastive",
    "contrastive_alpha",
    "contrastive_beta",
    "prompt_logprobs",
    "num_beams",
    "length_penalty",
    "num_return_sequences",
)
SAMPLING_OPTIONS = frozenset(_PLAIN + ("stop", "logprobs", "top_logprobs", "logit_bias", "early_stopping"))

ChatInput = Union[str, Mapping[str, str], Sequence[Mapping[str, str]]]


def new_job_id() -> int:
    """A random, non-zero 63-bit client job id."""
    return secrets.randbits(63) or 1


def _utf8(value: str, what: str) -> str:
    # Protobuf strings must be UTF-8: a lone surrogate would make the head
    # drop the whole message, so refuse the job here, naming the field.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise BadRequestError(f"{what} is not valid UTF-8 ({e.reason} at {e.start})") from None
    return value


def sampling_params(options: Mapping[str, Any]) -> "pb.SamplingParams":
    """The SamplingParams for `options` (only the ones given are set)."""
    unknown = set(options) - SAMPLING_OPTIONS
    if unknown:
        raise TypeError(f"unknown generation option(s): {', '.join(sorted(unknown))}")
    p = pb.SamplingParams()
    for name in _PLAIN:
        value = options.get(name)
        if value is not None:
            setattr(p, name, value)
    stop = options.get("stop")
    if stop is not None:
        for s in [stop] if isinstance(stop, str) else list(stop):
            p.stop.append(_utf8(s, "a stop string"))
    logprobs = options.get("logprobs")
    top = options.get("top_logprobs")
    if top is not None:
        p.top_logprobs = int(top)
    elif logprobs is True:
        p.top_logprobs = 0
    elif logprobs is not None and logprobs is not False:
        p.top_logprobs = int(logprobs)
    for token_id, bias in (options.get("logit_bias") or {}).items():
        p.logit_bias[int(token_id)] = float(bias)
    early = options.get("early_stopping")
    if early is not None:
        if early == "never":
            p.early_stopping = pb.EARLY_STOPPING_NEVER
        elif early is True or early == "true":
            p.early_stopping = pb.EARLY_STOPPING_TRUE
        elif early is False or early == "false":
            p.early_stopping = pb.EARLY_STOPPING_FALSE
        else:
            raise BadRequestError(f"early_stopping = {early!r}: must be True, False or 'never'")
    return p


def chat_messages(messages: ChatInput) -> List["pb.ChatMessage"]:
    """ChatMessages from a string (one user turn), a dict or a list of dicts."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, Mapping):
        messages = [messages]
    out = []
    for i, m in enumerate(messages):
        try:
            role, content = m["role"], m["content"]
        except (KeyError, TypeError):
            raise BadRequestError(f"chat message {i}: needs 'role' and 'content'") from None
        out.append(
            pb.ChatMessage(role=_utf8(role, f"chat message {i}'s role"), content=_utf8(content, f"chat message {i}"))
        )
    if not out:
        raise BadRequestError("a chat job needs at least one message")
    return out


def job_submit(
    *,
    job_id: int,
    prompt: Union[str, Iterable[int], None] = None,
    chat: Optional[List["pb.ChatMessage"]] = None,
    system: Optional[str] = None,
    session: Optional[str] = None,
    keep: bool = False,
    max_length: Optional[int] = None,
    priority: int = 0,
    options: Optional[Dict[str, Any]] = None,
) -> "pb.JobSubmit":
    """A streaming JobSubmit: `prompt` (text or token ids) or `chat`."""
    job = pb.JobSubmit(job_id=job_id, stream=True, priority=priority, keep=keep)
    if chat is not None:
        job.chat.extend(chat)
        if system:
            job.system = _utf8(system, "the system message")
    elif isinstance(prompt, str):
        job.prompt = _utf8(prompt, "the prompt")
    elif prompt is not None:
        job.prompt_tokens.extend(int(t) for t in prompt)
    if system and chat is None:
        raise BadRequestError("system applies to chat jobs only")
    if session:
        job.session = _utf8(session, "the session name")
    if max_length:
        job.max_length = max_length
    job.sampling.CopyFrom(sampling_params(options or {}))
    return job
