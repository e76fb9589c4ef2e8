"""Errors as typed exceptions.

Every error the SDK raises is a :class:`TroupeError`. An error the head sent
(an ``Error`` envelope) keeps its ``ErrorCode`` name in ``.code`` and its
``retryable`` flag; errors of the client side use the nearest wire code
(``TIMEOUT`` when the head did not answer in time, ``BAD_REQUEST`` for a job
that cannot be sent) or one of their own (``STREAM_MISMATCH``: a re-sent job
replayed different tokens than the ones already yielded).

The subclass follows the code::

    BAD_REQUEST, BAD_HEADER, UNKNOWN_TYPE,
    BAD_FRAMES, BAD_TENSOR, OVERSIZED, NON_FINITE   BadRequestError
    VERSION_MISMATCH                                VersionMismatchError (a BadRequestError)
    UNKNOWN_SESSION                                 UnknownSessionError
    UNKNOWN_JOB                                     UnknownJobError
    SESSION_EXISTS                                  SessionExistsError
    SESSION_BUSY                                    SessionBusyError
    SESSION_FULL                                    SessionFullError
    UNAUTHENTICATED                                 AuthenticationError
    FORBIDDEN                                       ForbiddenError (an AuthenticationError)
    CACHE_FULL                                      CacheFullError
    WRONG_MODEL                                     WrongModelError
    NO_ROUTE                                        NoRouteError (an UnavailableError)
    TIMEOUT                                         TimeoutError (also the built-in TimeoutError)
    CANCELLED                                       CancelledError
    UNAVAILABLE                                     UnavailableError
    INTERNAL                                        InternalError
    BUSY                                            BusyError (queue_depth, retry_after)
    LIMIT_EXCEEDED                                  LimitExceededError
"""
from __future__ import annotations

import builtins
from typing import Dict, Optional, Type

from . import troupe_pb2 as pb

__all__ = [
    "TroupeError",
    "BadRequestError",
    "VersionMismatchError",
    "UnknownSessionError",
    "UnknownJobError",
    "SessionExistsError",
    "SessionBusyError",
    "SessionFullError",
    "AuthenticationError",
    "ForbiddenError",
    "CacheFullError",
    "WrongModelError",
    "UnavailableError",
    "NoRouteError",
    "TimeoutError",
    "CancelledError",
    "InternalError",
    "BusyError",
    "LimitExceededError",
    "StreamMismatchError",
    "error_from_proto",
]


class TroupeError(Exception):
    """Base of every SDK error.

    Attributes:
        code: the head's ``ErrorCode`` name (``"CACHE_FULL"``...), or the
            client's own code (see the module docstring).
        text: what went wrong, as the head (or the client) put it.
        retryable: the same request may succeed later unchanged.
        job_id: the job it concerns, when known.
        node_id: the node that reported it ("" for the client itself).
    """

    default_code = "ERROR_CODE_UNSPECIFIED"

    def __init__(
        self,
        text: str,
        *,
        code: Optional[str] = None,
        retryable: bool = False,
        job_id: Optional[int] = None,
        node_id: str = "",
    ) -> None:
        self.code = code or self.default_code
        self.text = text
        self.retryable = retryable
        self.job_id = job_id
        self.node_id = node_id
        super().__init__(f"{self.code}: {text}")


class BadRequestError(TroupeError):
    """The request is invalid (a bad option value, an empty prompt...)."""

    default_code = "BAD_REQUEST"


class VersionMismatchError(BadRequestError):
    """The head speaks another protocol version."""

    default_code = "VERSION_MISMATCH"


class UnknownSessionError(TroupeError):
    """No live kept session of that name (never opened, expired or closed)."""

    default_code = "UNKNOWN_SESSION"


class UnknownJobError(TroupeError):
    """The head never accepted that job id, or no longer keeps it."""

    default_code = "UNKNOWN_JOB"


class SessionExistsError(TroupeError):
    """A kept session of that name is live already."""

    default_code = "SESSION_EXISTS"


class SessionBusyError(TroupeError):
    """The kept session runs another job (one at a time)."""

    default_code = "SESSION_BUSY"


class SessionFullError(TroupeError):
    """The kept session has no room left in its max_length."""

    default_code = "SESSION_FULL"


class AuthenticationError(TroupeError):
    """The head does not know this client's key."""

    default_code = "UNAUTHENTICATED"


class ForbiddenError(AuthenticationError):
    """The key is known but lacks the right (an admin action)."""

    default_code = "FORBIDDEN"


class CacheFullError(TroupeError):
    """The job is larger than a shard's whole KV cache budget."""

    default_code = "CACHE_FULL"


class WrongModelError(TroupeError):
    """A node serves another model."""

    default_code = "WRONG_MODEL"


class UnavailableError(TroupeError):
    """A node (or the head) is shutting down, or died without a replica."""

    default_code = "UNAVAILABLE"


class NoRouteError(UnavailableError):
    """No node serves some of the model's layers."""

    default_code = "NO_ROUTE"


class TimeoutError(TroupeError, builtins.TimeoutError):  # noqa: A001 - the SDK's own, also a built-in one
    """No answer in time (from the head, or the head reports a node's timeout)."""

    default_code = "TIMEOUT"


class CancelledError(TroupeError):
    """The job was cancelled (by a client, a closed session, or a client that left)."""

    default_code = "CANCELLED"


class InternalError(TroupeError):
    """A bug or a library failure on the reporting node."""

    default_code = "INTERNAL"


class BusyError(TroupeError):
    """The head's queue is full.

    Attributes:
        queue_depth: jobs waiting in the head's queue.
        retry_after: seconds after which to try again.
    """

    default_code = "BUSY"

    def __init__(self, text: str, *, queue_depth: int = 0, retry_after: float = 0.0, **kwargs: object) -> None:
        super().__init__(text, **kwargs)  # type: ignore[arg-type]
        self.queue_depth = queue_depth
        self.retry_after = retry_after


class LimitExceededError(TroupeError):
    """A per-key limit (concurrent jobs, prompt tokens, max tokens, request size); the text names it."""

    default_code = "LIMIT_EXCEEDED"


class StreamMismatchError(TroupeError):
    """A re-sent job replayed tokens other than those already yielded."""

    default_code = "STREAM_MISMATCH"


_BY_CODE: Dict[str, Type[TroupeError]] = {
    "BAD_REQUEST": BadRequestError,
    "BAD_HEADER": BadRequestError,
    "UNKNOWN_TYPE": BadRequestError,
    "BAD_FRAMES": BadRequestError,
    "BAD_TENSOR": BadRequestError,
    "OVERSIZED": BadRequestError,
    "NON_FINITE": BadRequestError,
    "VERSION_MISMATCH": VersionMismatchError,
    "UNKNOWN_SESSION": UnknownSessionError,
    "UNKNOWN_JOB": UnknownJobError,
    "SESSION_EXISTS": SessionExistsError,
    "SESSION_BUSY": SessionBusyError,
    "SESSION_FULL": SessionFullError,
    "UNAUTHENTICATED": AuthenticationError,
    "FORBIDDEN": ForbiddenError,
    "CACHE_FULL": CacheFullError,
    "WRONG_MODEL": WrongModelError,
    "NO_ROUTE": NoRouteError,
    "TIMEOUT": TimeoutError,
    "CANCELLED": CancelledError,
    "UNAVAILABLE": UnavailableError,
    "INTERNAL": InternalError,
    "BUSY": BusyError,
    "LIMIT_EXCEEDED": LimitExceededError,
}


def error_from_proto(error: "pb.Error") -> TroupeError:
    """The typed exception for an ``Error`` message from the head."""
    try:
        code = pb.ErrorCode.Name(error.code)
    except ValueError:  # a code newer than this SDK
        code = f"ERROR_CODE_{error.code}"
    cls = _BY_CODE.get(code, TroupeError)
    kwargs = dict(
        code=code,
        retryable=error.retryable,
        job_id=error.job_id if error.HasField("job_id") else None,
        node_id=error.node_id,
    )
    if cls is BusyError:
        return BusyError(error.text, queue_depth=error.queue_depth, retry_after=error.retry_after_seconds, **kwargs)
    return cls(error.text, **kwargs)  # type: ignore[arg-type]
