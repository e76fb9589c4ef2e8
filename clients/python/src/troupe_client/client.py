"""The synchronous client of a head's job endpoint (the C++ JobClient's behaviour).

    client = Client.from_cluster("/tmp/cluster")
    print(client.generate("The capital of France is", max_tokens=8).text)
    for token in client.stream("Once upon a time", temperature=0.8, seed=7):
        print(token.text, end="", flush=True)

Timeouts keep a dead cluster from hanging the caller: the head's first
answer to a request must come within ``timeout`` seconds, and later messages
of a running job no more than ``idle_timeout`` apart. A job whose connection
is lost, or whose answer stops coming, is re-sent up to ``retries`` times
with the same job id (see :func:`troupe_client._protocol.should_retry`): the
head answers a job id it knows with that job's stream from the start, and the
stream skips the tokens it has given already (checking they are the same).

Thread-safety: a Client may be shared by threads; a TokenStream or Session
belongs to one thread at a time.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, Generator, Iterator, List, Optional, Tuple, Union

from . import troupe_pb2 as pb
from ._channel import Channel
from ._protocol import JobRun, RequestIds, envelope, should_retry
from .errors import TroupeError, UnknownSessionError, error_from_proto
from .keys import KeyPair, PathLike, client_keys_of, cluster_settings, server_key_of
from .options import ChatInput, chat_messages, job_submit, new_job_id
from .types import JobStatus, KeptSession, Metrics, Result, Token

__all__ = ["Client", "TokenStream", "Session"]

Prompt = Union[str, List[int]]
StatusCallback = Callable[[JobStatus], None]
ClientKeys = Union[None, PathLike, Tuple[str, str], KeyPair]


def _keys(server_key: Optional[str], client_keys: ClientKeys) -> Tuple[Optional[str], Optional[KeyPair]]:
    if server_key is None:
        if client_keys is not None:
            raise TypeError("client_keys needs server_key (CURVE)")
        return None, None
    return server_key_of(server_key), client_keys_of(client_keys)


def _backoff(attempt: int) -> float:
    return min(0.1 * (2 ** attempt), 2.0)


def expect(env: pb.Envelope, body: str, what: str) -> Any:
    """The `body` of an answer; its error raised; TroupeError for anything else."""
    kind = env.WhichOneof("body")
    if kind == "error":
        raise error_from_proto(env.error)
    if kind != body:
        raise TroupeError(f"unexpected answer ({kind}) to {what}", code="INTERNAL")
    return getattr(env, body)


class TokenStream(Iterator[Token]):
    """A job's tokens as they arrive; iterate it, then read ``result``.

    Attributes:
        job_id: the job's id (the client's own, or the one the head gave).
        status: the latest JobStatus (acceptance, JOB_QUEUED notices).
        result: the Result once the stream has ended, else None.

    The job is sent when the stream is first read (``job_id``, the client's
    own, is known before). Closing a stream before its end (``close()``,
    ``with``, or dropping it) cancels the job it submitted; an attached
    stream leaves the job running.
    """

    def __init__(self, client: "Client", run: JobRun, on_status: Optional[StatusCallback],
                 on_refused: Optional[Callable[[], None]] = None) -> None:
        self._run = run
        self._events = client._drive(run, on_status, cancel_on_close=run.submit is not None)
        self._on_refused = on_refused  # called when the head refuses the job before accepting it

    @property
    def job_id(self) -> int:
        return self._run.job_id

    @property
    def status(self) -> Optional[JobStatus]:
        return self._run.status

    @property
    def result(self) -> Optional[Result]:
        return self._run.result

    def __iter__(self) -> "TokenStream":
        return self

    def __next__(self) -> Token:
        try:
            for kind, value in self._events:
                if kind == "token":
                    return value  # type: ignore[return-value]
        except TroupeError:
            if not self._run.accepted and self._on_refused is not None:
                self._on_refused()
            raise
        raise StopIteration

    def collect(self) -> Result:
        """Consumes the rest of the stream; the Result."""
        for _ in self:
            pass
        assert self._run.result is not None
        return self._run.result

    def close(self) -> None:
        """Stops reading (cancelling a submitted job that has not ended)."""
        self._events.close()

    def __enter__(self) -> "TokenStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Client:
    """A connection to a head's job endpoint.

    Args:
        endpoint: the job endpoint, ``"tcp://127.0.0.1:5600"``.
        server_key: the head's CURVE public key (Z85, or a node.pub file);
            None for a plain endpoint (loopback).
        client_keys: this client's pair with CURVE: a node.key file, a
            (public, secret) Z85 tuple, or None for a fresh pair (which the
            head's allowlist must then know).
        timeout: seconds for the head's first answer to a request.
        idle_timeout: seconds at most between messages of a running job.
        retries: re-sends of a job (same job id) after a lost connection or
            a timeout.
    """

    def __init__(
        self,
        endpoint: str,
        server_key: Optional[str] = None,
        client_keys: ClientKeys = None,
        *,
        timeout: float = 10.0,
        idle_timeout: float = 120.0,
        retries: int = 3,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        self.retries = retries
        server, keys = _keys(server_key, client_keys)
        self.curve = server is not None
        self._channel = Channel(endpoint, server, keys)
        self._ids = RequestIds()

    @classmethod
    def from_cluster(cls, directory: PathLike, **kwargs: Any) -> "Client":
        """A client of the cluster started by ``troupe cluster up --dir DIRECTORY``
        (reads its cluster.json and the keys it names; see keys.cluster_settings)."""
        s = cluster_settings(directory)
        return cls(s.endpoint, s.server_key, s.client_keys, **kwargs)

    def close(self) -> None:
        """Closes the socket. Close (or finish) its streams first: closing a
        stream cancels its job, closing the client only stops listening."""
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ jobs

    def generate(self, prompt: Prompt, **options: Any) -> Result:
        """Runs a job on `prompt` (text, or token ids) and returns its Result.

        Options: every sampling option (options.py: temperature, top_k,
        max_tokens, seed, stop, logprobs, num_beams, contrastive...), and
        ``job_id`` (default: a random 63-bit id), ``priority``,
        ``on_status`` (called with each JobStatus: acceptance, JOB_QUEUED
        notices), and the kept-session fields of JobSubmit as they are
        (``session=NAME``, ``keep=True``, ``max_length=N``; ``session()`` is
        the easier way).
        """
        return self.stream(prompt, **options).collect()

    def stream(self, prompt: Prompt, **options: Any) -> TokenStream:
        """Like generate, but yields each Token as it arrives (see TokenStream)."""
        return self._submit(prompt=prompt, options=options)

    def chat(self, messages: ChatInput, **options: Any) -> Result:
        """A chat job: `messages` is a user turn (str) or a list of
        ``{"role": "system"|"user"|"assistant", "content": ...}``; ``system=``
        gives a system message."""
        return self.chat_stream(messages, **options).collect()

    def chat_stream(self, messages: ChatInput, **options: Any) -> TokenStream:
        """Like chat, as a TokenStream."""
        return self._submit(chat=chat_messages(messages), options=options)

    def session(self, name: Optional[str] = None, max_length: Optional[int] = None, *,
                resume: bool = False) -> "Session":
        """A kept session (a conversation whose KV cache stays on the shards),
        as a context manager: its first job opens it (a random name unless
        `name` is given), closing it frees it. With ``resume=True`` it
        continues the live session `name` (opened elsewhere) instead."""
        return Session(self, name, max_length, resume)

    def _submit(self, *, options: Dict[str, Any], session: Optional[str] = None, keep: bool = False,
                max_length: Optional[int] = None, on_refused: Optional[Callable[[], None]] = None,
                **what: Any) -> TokenStream:
        on_status = options.pop("on_status", None)
        if session is None:  # generate(..., session=NAME[, keep=True, max_length=N]): the JobSubmit fields
            session = options.pop("session", None)
            keep = bool(options.pop("keep", False))
            max_length = options.pop("max_length", None)
        job = job_submit(
            job_id=options.pop("job_id", None) or new_job_id(),
            priority=options.pop("priority", 0),
            system=options.pop("system", None),
            session=session,
            keep=keep,
            max_length=max_length,
            options=options,
            **what,
        )
        return TokenStream(self, JobRun(job), on_status, on_refused)

    def attach(self, job_id: int, from_index: int = 0, *, on_status: Optional[StatusCallback] = None) -> TokenStream:
        """Watches job `job_id` (running, queued, or finished within the head's
        retention window): its tokens from `from_index` on, then its Result.
        UnknownJobError when the head does not know the job."""
        return TokenStream(self, JobRun(pb.JobAttach(job_id=job_id, stream=True, from_index=from_index)), on_status)

    def _drive(self, run: JobRun, on_status: Optional[StatusCallback],
               cancel_on_close: bool) -> Generator[Tuple[str, Any], None, None]:
        """The events of `run`, re-sending it after a lost connection or timeout."""
        failures = 0
        ended = False
        try:
            while True:
                request_id = self._ids.take()
                since = self._channel.open(request_id)
                try:
                    self._channel.send(run.request(request_id), self.timeout)
                    while True:
                        wait = self.idle_timeout if run.accepted else self.timeout
                        env = self._channel.receive(request_id, self.timeout if wait is None else wait, since)
                        for event in run.feed(env):
                            if event[0] == "status" and on_status is not None:
                                on_status(event[1])  # type: ignore[arg-type]
                            if event[0] == "done":
                                ended = True
                            yield event
                        if ended:
                            return
                except TroupeError as e:
                    if not should_retry(e) or failures >= self.retries:
                        ended = True
                        raise
                    failures += 1
                    run.restart()
                    time.sleep(_backoff(failures))
                    self._channel.wait_reconnected(self.timeout)
                finally:
                    self._channel.forget(request_id)
        finally:
            if not ended and cancel_on_close and run.accepted:
                self._send_cancel(run.job_id)

    # ------------------------------------------------------------ queries

    def _ask(self, **body: Any) -> pb.Envelope:
        """Sends one request; its (first) answer."""
        request_id = self._ids.take()
        since = self._channel.open(request_id)
        try:
            self._channel.send(envelope(request_id, **body), self.timeout)
            return self._channel.receive(request_id, self.timeout, since)
        finally:
            self._channel.forget(request_id)

    def _send_cancel(self, job_id: int) -> None:
        try:
            self._channel.send(envelope(self._ids.take(), job_cancel=pb.JobCancel(job_id=job_id)), self.timeout)
        except TroupeError:
            pass

    def cancel(self, job_id: int, wait: Optional[float] = None) -> Optional[JobStatus]:
        """Cancels job `job_id` (queued, running, or recovered after a head
        restart): its watchers' streams end with CancelledError. Returns the
        job's JobStatus after the cancel — ``"aborted"``, or how it had ended
        already — waiting at most `wait` seconds (default ``timeout``) for it;
        None when no answer came. UnknownJobError when the head does not know
        the job."""
        request_id = self._ids.take()
        since = self._channel.open(request_id)
        try:
            self._channel.send(envelope(request_id, job_cancel=pb.JobCancel(job_id=job_id)), self.timeout)
            try:
                env = self._channel.receive(request_id, self.timeout if wait is None else wait, since)
            except TroupeError as e:
                if e.code == "TIMEOUT" and not e.node_id:
                    return None
                raise
            return JobStatus.from_proto(expect(env, "job_status", "a cancel"))
        finally:
            self._channel.forget(request_id)

    def status(self, job_id: int) -> JobStatus:
        """Where job `job_id` stands (state, queue position, tokens so far,
        priority); UnknownJobError when the head does not know it."""
        env = self._ask(job_status_query=pb.JobStatusQuery(job_id=job_id))
        return JobStatus.from_proto(expect(env, "job_status", "a status query"))

    def metrics(self) -> Metrics:
        """The cluster's merged metrics (``troupe status``)."""
        return Metrics.from_proto(expect(self._ask(metrics_query=pb.MetricsQuery()), "metrics_snapshot",
                                         "a metrics query"))

    def sessions(self) -> List[KeptSession]:
        """The head's live kept sessions (``troupe session list``)."""
        env = self._ask(kept_session_query=pb.KeptSessionQuery())
        return [KeptSession.from_proto(s) for s in expect(env, "kept_session_list", "a session query").sessions]

    def close_session(self, name: str) -> None:
        """Closes kept session `name` now (cancelling its running job);
        UnknownSessionError when there is no such live session."""
        env = self._ask(kept_session_close=pb.KeptSessionClose(name=name))
        expect(env, "kept_session_closed", "a session close")


class Session:
    """A kept session: every job in it continues one conversation whose KV
    cache stays on its shards, so each turn prefills only its new tokens.

    The first job opens it (``keep``, unless resumed; ``max_length`` positions reserved on
    every shard, default the head's), later ones continue it: a chat job
    sends only its new messages, a plain prompt is appended as raw text.
    Closing it (``close()``, or leaving the ``with`` block) frees its caches.
    Errors: SessionExistsError (the name is live already), SessionBusyError
    (one job at a time), SessionFullError, UnknownSessionError (expired).
    """

    def __init__(self, client: Client, name: Optional[str], max_length: Optional[int], resume: bool = False) -> None:
        if resume and not name:
            raise TypeError("resume=True needs the name of the session")
        self.client = client
        self.name = name or f"py-{new_job_id():016x}"
        self.max_length = max_length
        self.opened = resume

    def _submit(self, options: Dict[str, Any], **what: Any) -> TokenStream:
        opening = not self.opened
        stream = self.client._submit(
            options=options,
            session=self.name,
            keep=opening,
            max_length=self.max_length if opening else None,
            on_refused=self._refused if opening else None,
            **what,
        )
        self.opened = True
        return stream

    def _refused(self) -> None:
        self.opened = False  # the opening job was refused: the next job opens the session

    def generate(self, prompt: Prompt, **options: Any) -> Result:
        """The next job of the conversation on raw `prompt`."""
        return self.stream(prompt, **options).collect()

    def stream(self, prompt: Prompt, **options: Any) -> TokenStream:
        return self._submit(options, prompt=prompt)

    def chat(self, messages: ChatInput, **options: Any) -> Result:
        """The conversation's next turn(s): only the new messages."""
        return self.chat_stream(messages, **options).collect()

    def chat_stream(self, messages: ChatInput, **options: Any) -> TokenStream:
        return self._submit(options, chat=chat_messages(messages))

    def close(self) -> None:
        """Closes the session on the head (nothing when no job opened it)."""
        if not self.opened:
            return
        self.opened = False
        try:
            self.client.close_session(self.name)
        except UnknownSessionError:
            pass  # expired, or its opening job failed

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
