"""The asyncio client: :class:`AsyncClient` has :class:`~troupe_client.Client`'s
surface with coroutines and async iterators (zmq.asyncio).

    async with AsyncClient.from_cluster("/tmp/cluster") as client:
        result = await client.generate("The capital of France is", max_tokens=8)
        async for token in client.stream("Once upon a time", max_tokens=32):
            print(token.text, end="")

One reader task per client sorts the head's answers into a queue per pending
request (and wakes every waiter when the monitor sees the connection lost or
a handshake refused); timeouts and retries are the sync Client's. Use a
client from one event loop.
"""
from __future__ import annotations

import asyncio
from typing import Any, AsyncGenerator, AsyncIterator, Callable, Dict, List, Optional, Tuple, Union

import zmq
import zmq.asyncio

from . import troupe_pb2 as pb
from ._channel import _MONITORED, ConnectionState, configure, no_answer
from ._protocol import JobRun, RequestIds, decode, envelope, should_retry
from .client import ClientKeys, Prompt, StatusCallback, _backoff, _keys, expect
from .errors import BadRequestError, TroupeError, UnknownSessionError
from .keys import KeyPair, PathLike, cluster_settings
from .options import ChatInput, chat_messages, job_submit, new_job_id
from .types import JobStatus, KeptSession, Metrics, Result, Token

__all__ = ["AsyncClient", "AsyncTokenStream", "AsyncSession"]

_Item = Union[pb.Envelope, BaseException, None]  # None: look at the connection state


class _AsyncChannel:
    def __init__(self, endpoint: str, server_key: Optional[str], client_keys: Optional[KeyPair]) -> None:
        self.endpoint = endpoint
        self._context = zmq.asyncio.Context()
        self._socket = self._context.socket(zmq.DEALER)
        configure(self._socket, server_key, client_keys)
        self._monitor = self._socket.get_monitor_socket(_MONITORED)
        self.state = ConnectionState(endpoint, bool(server_key))
        try:
            self._socket.connect(endpoint)
        except zmq.ZMQError as e:
            self._socket.disable_monitor()
            self._monitor.close(linger=0)
            self._socket.close(linger=0)
            self._context.term()
            raise BadRequestError(f"cannot connect to {endpoint!r}: {e}") from None
        self._queues: Dict[int, "asyncio.Queue[_Item]"] = {}
        self._reader: Optional["asyncio.Task[None]"] = None

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            try:
                await self._reader
            except (asyncio.CancelledError, Exception):
                pass
        self._socket.disable_monitor()
        self._monitor.close(linger=0)
        self._socket.close(linger=0)
        self._context.term()

    def open(self, request_id: int) -> int:
        if self._reader is None or self._reader.done():
            self._reader = asyncio.get_running_loop().create_task(self._read())
        self._queues[request_id] = asyncio.Queue()
        return self.state.disconnects

    def forget(self, request_id: int) -> None:
        self._queues.pop(request_id, None)

    async def send(self, frame: bytes, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            try:
                await self._socket.send(frame, zmq.NOBLOCK)
                return
            except zmq.Again:  # the DEALER queues while it connects; wait for room
                if loop.time() >= deadline:
                    raise no_answer(self.endpoint, timeout) from None
                await asyncio.sleep(0.01)

    async def wait_reconnected(self, timeout: float) -> None:
        """See Channel.wait_reconnected (the reader task counts the events)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if self._reader is None or self._reader.done():
            self._reader = loop.create_task(self._read())
        while loop.time() < deadline and not (self.state.reconnected() or self.state.refused is not None):
            await asyncio.sleep(0.02)

    async def receive(self, request_id: int, timeout: float, since: int) -> pb.Envelope:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        queue = self._queues[request_id]
        while True:
            if queue.empty():
                lost = self.state.lost(since)
                if lost is not None:
                    raise lost
            left = deadline - loop.time()
            if left <= 0 and queue.empty():
                raise no_answer(self.endpoint, timeout)
            try:
                item = await asyncio.wait_for(queue.get(), max(left, 0.001))
            except asyncio.TimeoutError:
                continue
            if isinstance(item, BaseException):
                raise item
            if item is not None:
                return item

    def _broadcast(self, item: _Item) -> None:
        for queue in self._queues.values():
            queue.put_nowait(item)

    async def _read(self) -> None:
        poller = zmq.asyncio.Poller()
        poller.register(self._socket, zmq.POLLIN)
        poller.register(self._monitor, zmq.POLLIN)
        while True:
            ready = dict(await poller.poll())
            if self._monitor in ready:
                self.state.on_event(await self._monitor.recv_multipart())
                self._broadcast(None)
            if self._socket in ready:
                frames = await self._socket.recv_multipart()
                try:
                    env = decode(frames, self.endpoint)
                except TroupeError as e:
                    self._broadcast(e)
                    continue
                queue = self._queues.get(env.request_id)
                if queue is not None:
                    queue.put_nowait(env)
                elif env.request_id == 0 and env.HasField("error"):
                    self._broadcast(env)


class AsyncTokenStream(AsyncIterator[Token]):
    """A job's tokens as they arrive (``async for``), then ``result``.

    As :class:`~troupe_client.TokenStream`: ``job_id``, ``status``,
    ``result``; ``await collect()``; ``await aclose()`` (or ``async with``)
    before the end cancels a submitted job.
    """

    def __init__(self, client: "AsyncClient", run: JobRun, on_status: Optional[StatusCallback],
                 on_refused: Optional[Callable[[], None]] = None) -> None:
        self._run = run
        self._events = client._drive(run, on_status, cancel_on_close=run.submit is not None)
        self._on_refused = on_refused

    @property
    def job_id(self) -> int:
        return self._run.job_id

    @property
    def status(self) -> Optional[JobStatus]:
        return self._run.status

    @property
    def result(self) -> Optional[Result]:
        return self._run.result

    def __aiter__(self) -> "AsyncTokenStream":
        return self

    async def __anext__(self) -> Token:
        try:
            async for kind, value in self._events:
                if kind == "token":
                    return value  # type: ignore[no-any-return]
        except TroupeError:
            if not self._run.accepted and self._on_refused is not None:
                self._on_refused()
            raise
        raise StopAsyncIteration

    async def collect(self) -> Result:
        """Consumes the rest of the stream; the Result."""
        async for _ in self:
            pass
        assert self._run.result is not None
        return self._run.result

    async def aclose(self) -> None:
        await self._events.aclose()

    async def __aenter__(self) -> "AsyncTokenStream":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncClient:
    """The asyncio twin of :class:`~troupe_client.Client` (same arguments)."""

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
        self._channel = _AsyncChannel(endpoint, server, keys)
        self._ids = RequestIds()

    @classmethod
    def from_cluster(cls, directory: PathLike, **kwargs: Any) -> "AsyncClient":
        """A client of the cluster started by ``troupe cluster up --dir DIRECTORY``."""
        s = cluster_settings(directory)
        return cls(s.endpoint, s.server_key, s.client_keys, **kwargs)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------ jobs

    async def generate(self, prompt: Prompt, **options: Any) -> Result:
        """See Client.generate."""
        return await self.stream(prompt, **options).collect()

    def stream(self, prompt: Prompt, **options: Any) -> AsyncTokenStream:
        """See Client.stream."""
        return self._submit(prompt=prompt, options=options)

    async def chat(self, messages: ChatInput, **options: Any) -> Result:
        """See Client.chat."""
        return await self.chat_stream(messages, **options).collect()

    def chat_stream(self, messages: ChatInput, **options: Any) -> AsyncTokenStream:
        return self._submit(chat=chat_messages(messages), options=options)

    def session(self, name: Optional[str] = None, max_length: Optional[int] = None, *,
                resume: bool = False) -> "AsyncSession":
        """A kept session, as an async context manager (see Client.session)."""
        return AsyncSession(self, name, max_length, resume)

    def _submit(self, *, options: Dict[str, Any], session: Optional[str] = None, keep: bool = False,
                max_length: Optional[int] = None, on_refused: Optional[Callable[[], None]] = None,
                **what: Any) -> AsyncTokenStream:
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
        return AsyncTokenStream(self, JobRun(job), on_status, on_refused)

    def attach(self, job_id: int, from_index: int = 0, *,
               on_status: Optional[StatusCallback] = None) -> AsyncTokenStream:
        """See Client.attach."""
        return AsyncTokenStream(self, JobRun(pb.JobAttach(job_id=job_id, stream=True, from_index=from_index)),
                                on_status)

    async def _drive(self, run: JobRun, on_status: Optional[StatusCallback],
                     cancel_on_close: bool) -> AsyncGenerator[Tuple[str, Any], None]:
        failures = 0
        ended = False
        try:
            while True:
                request_id = self._ids.take()
                since = self._channel.open(request_id)
                try:
                    await self._channel.send(run.request(request_id), self.timeout)
                    while True:
                        wait = self.idle_timeout if run.accepted else self.timeout
                        env = await self._channel.receive(request_id, self.timeout if wait is None else wait, since)
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
                    await asyncio.sleep(_backoff(failures))
                    await self._channel.wait_reconnected(self.timeout)
                finally:
                    self._channel.forget(request_id)
        finally:
            if not ended and cancel_on_close and run.accepted:
                try:
                    await self._channel.send(
                        envelope(self._ids.take(), job_cancel=pb.JobCancel(job_id=run.job_id)), self.timeout)
                except TroupeError:
                    pass

    # ------------------------------------------------------------ queries

    async def _ask(self, **body: Any) -> pb.Envelope:
        request_id = self._ids.take()
        since = self._channel.open(request_id)
        try:
            await self._channel.send(envelope(request_id, **body), self.timeout)
            return await self._channel.receive(request_id, self.timeout, since)
        finally:
            self._channel.forget(request_id)

    async def cancel(self, job_id: int, wait: Optional[float] = None) -> Optional[JobStatus]:
        """See Client.cancel."""
        request_id = self._ids.take()
        since = self._channel.open(request_id)
        try:
            await self._channel.send(envelope(request_id, job_cancel=pb.JobCancel(job_id=job_id)), self.timeout)
            try:
                env = await self._channel.receive(request_id, self.timeout if wait is None else wait, since)
            except TroupeError as e:
                if e.code == "TIMEOUT" and not e.node_id:
                    return None
                raise
            return JobStatus.from_proto(expect(env, "job_status", "a cancel"))
        finally:
            self._channel.forget(request_id)

    async def status(self, job_id: int) -> JobStatus:
        """See Client.status."""
        env = await self._ask(job_status_query=pb.JobStatusQuery(job_id=job_id))
        return JobStatus.from_proto(expect(env, "job_status", "a status query"))

    async def metrics(self) -> Metrics:
        """See Client.metrics."""
        env = await self._ask(metrics_query=pb.MetricsQuery())
        return Metrics.from_proto(expect(env, "metrics_snapshot", "a metrics query"))

    async def sessions(self) -> List[KeptSession]:
        """See Client.sessions."""
        env = await self._ask(kept_session_query=pb.KeptSessionQuery())
        return [KeptSession.from_proto(s) for s in expect(env, "kept_session_list", "a session query").sessions]

    async def close_session(self, name: str) -> None:
        """See Client.close_session."""
        env = await self._ask(kept_session_close=pb.KeptSessionClose(name=name))
        expect(env, "kept_session_closed", "a session close")


class AsyncSession:
    """A kept session of an AsyncClient (see :class:`~troupe_client.Session`)."""

    def __init__(self, client: AsyncClient, name: Optional[str], max_length: Optional[int],
                 resume: bool = False) -> None:
        if resume and not name:
            raise TypeError("resume=True needs the name of the session")
        self.client = client
        self.name = name or f"py-{new_job_id():016x}"
        self.max_length = max_length
        self.opened = resume

    def _submit(self, options: Dict[str, Any], **what: Any) -> AsyncTokenStream:
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
        self.opened = False

    async def generate(self, prompt: Prompt, **options: Any) -> Result:
        return await self.stream(prompt, **options).collect()

    def stream(self, prompt: Prompt, **options: Any) -> AsyncTokenStream:
        return self._submit(options, prompt=prompt)

    async def chat(self, messages: ChatInput, **options: Any) -> Result:
        return await self.chat_stream(messages, **options).collect()

    def chat_stream(self, messages: ChatInput, **options: Any) -> AsyncTokenStream:
        return self._submit(options, chat=chat_messages(messages))

    async def close(self) -> None:
        if not self.opened:
            return
        self.opened = False
        try:
            await self.client.close_session(self.name)
        except UnknownSessionError:
            pass

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
