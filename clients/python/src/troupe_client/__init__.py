"""troupe_client: the Python SDK of a Troupe cluster's job endpoint.

    from troupe_client import Client
    client = Client.from_cluster("/tmp/cluster")      # troupe cluster up --dir /tmp/cluster
    result = client.generate("The capital of France is", max_tokens=8)
    print(result.text, result.usage.prompt_tokens, result.finish_reason)

See README.md for streaming, chat, kept sessions, beam search, cancel,
status, attach, the AsyncClient and the errors.
"""
from .aio import AsyncClient, AsyncSession, AsyncTokenStream
from .client import Client, Session, TokenStream
from .errors import (
    AuthenticationError,
    BadRequestError,
    BusyError,
    CacheFullError,
    CancelledError,
    ForbiddenError,
    InternalError,
    LimitExceededError,
    NoRouteError,
    SessionBusyError,
    SessionExistsError,
    SessionFullError,
    StreamMismatchError,
    TimeoutError,
    TroupeError,
    UnavailableError,
    UnknownJobError,
    UnknownSessionError,
    VersionMismatchError,
    WrongModelError,
)
from .keys import KeyPair
from .types import JobStatus, KeptSession, Metrics, PromptToken, Result, Sequence, Timings, Token, TopLogprob, Usage

__version__ = "0.5.0"

__all__ = [
    "Client",
    "Session",
    "TokenStream",
    "AsyncClient",
    "AsyncSession",
    "AsyncTokenStream",
    "KeyPair",
    "Result",
    "Token",
    "TopLogprob",
    "PromptToken",
    "Sequence",
    "Usage",
    "Timings",
    "JobStatus",
    "KeptSession",
    "Metrics",
    "TroupeError",
    "AuthenticationError",
    "BadRequestError",
    "BusyError",
    "CacheFullError",
    "CancelledError",
    "ForbiddenError",
    "InternalError",
    "LimitExceededError",
    "NoRouteError",
    "SessionBusyError",
    "SessionExistsError",
    "SessionFullError",
    "StreamMismatchError",
    "TimeoutError",
    "UnavailableError",
    "UnknownJobError",
    "UnknownSessionError",
    "VersionMismatchError",
    "WrongModelError",
]
