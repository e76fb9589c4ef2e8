"""The DEALER socket to the head's job endpoint, for the synchronous Client.

One socket per client (a random routing id), CURVE when a server key is
given, plus a monitor of its connection so that a lost connection or a
refused CURVE handshake is noticed at once instead of after a timeout.
Answers are sorted into a mailbox per pending request id; an answer for no
pending request (a late answer of a finished one) is dropped, and an error
with request id 0 (a connection-level refusal) goes to every pending one.

Thread-safety: every socket call holds one lock, and a waiting receiver polls
in short slices, so threads may share a client (each its own requests).
"""
from __future__ import annotations

import collections
import secrets
import struct
import threading
import time
from typing import Deque, Dict, List, Optional

import zmq

from . import troupe_pb2 as pb
from ._protocol import decode
from .errors import AuthenticationError, BadRequestError, TimeoutError, TroupeError, UnavailableError
from .keys import KeyPair

_MONITORED = (
    zmq.EVENT_CONNECTED
    | zmq.EVENT_DISCONNECTED
    | zmq.EVENT_HANDSHAKE_SUCCEEDED
    | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
    | zmq.EVENT_HANDSHAKE_FAILED_AUTH
)
_SLICE_S = 0.1


def configure(sock: zmq.Socket, server_key: Optional[str], client_keys: Optional[KeyPair]) -> None:
    """The options JobClient's link sets (transport/link.cpp), and CURVE."""
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.ROUTING_ID, f"client-py-{secrets.token_hex(8)}".encode())
    sock.setsockopt(zmq.RECONNECT_IVL, 100)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, 2000)
    sock.setsockopt(zmq.SNDHWM, 32)
    sock.setsockopt(zmq.RCVHWM, 0)  # a fast stream never blocks the head on us
    sock.setsockopt(zmq.TCP_KEEPALIVE, 1)
    sock.setsockopt(zmq.TCP_KEEPALIVE_IDLE, 30)
    # ZMTP heartbeats (the head's ZeroMQ answers them without its app): a
    # connection that goes silent — a cut cable, a stalled peer — is dropped
    # within HEARTBEAT_TIMEOUT, which the monitor reports as lost.
    sock.setsockopt(zmq.HEARTBEAT_IVL, 2000)
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, 10000)
    if server_key:
        keys = client_keys or KeyPair(*[k.decode() for k in zmq.curve_keypair()])
        sock.curve_serverkey = server_key.encode()
        sock.curve_publickey = keys.public_key.encode()
        sock.curve_secretkey = keys.secret_key.encode()


class ConnectionState:
    """What the monitor has seen: disconnects (counted) and a refused handshake."""

    def __init__(self, endpoint: str, curve: bool) -> None:
        self.endpoint = endpoint
        self.curve = curve
        self.disconnects = 0
        self.handshakes = 0  # connections made (handshake done)
        self._handshakes_at_loss = 0
        self.refused: Optional[TroupeError] = None

    def on_event(self, frames: List[bytes]) -> None:
        event, value = struct.unpack("=hi", frames[0][:6])
        if event == zmq.EVENT_DISCONNECTED:
            self.disconnects += 1
            self._handshakes_at_loss = self.handshakes
        elif event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
            self.handshakes += 1
            self.refused = None
        elif event == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
            self.refused = AuthenticationError(
                f"{self.endpoint} refused this client's CURVE key (ZAP status {value}): "
                "is its public key in the head's allowlist?"
            )
        elif event in (zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL):
            how = "CURVE" if self.curve else "plain"
            self.refused = AuthenticationError(
                f"the handshake with {self.endpoint} failed ({how} client): "
                + ("a wrong server key?" if self.curve else "the endpoint wants CURVE (server_key=...)")
            )

    def reconnected(self) -> bool:
        """Connected again since the last disconnect (or never disconnected)."""
        return self.disconnects == 0 or self.handshakes > self._handshakes_at_loss

    def lost(self, since: int) -> Optional[TroupeError]:
        """The error for a receiver that started when disconnects was `since`."""
        if self.refused is not None:
            return self.refused
        if self.disconnects > since:
            return UnavailableError(f"lost the connection to {self.endpoint}", retryable=True)
        return None


def no_answer(endpoint: str, timeout: float) -> TimeoutError:
    return TimeoutError(f"no answer from {endpoint} within {timeout:g} s (is the cluster running?)", retryable=True)


class Channel:
    def __init__(self, endpoint: str, server_key: Optional[str], client_keys: Optional[KeyPair]) -> None:
        self.endpoint = endpoint
        self._context = zmq.Context()
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
        self._lock = threading.Lock()
        self._mailboxes: Dict[int, Deque[pb.Envelope]] = {}
        self._poller = zmq.Poller()
        self._poller.register(self._socket, zmq.POLLIN)
        self._poller.register(self._monitor, zmq.POLLIN)

    def close(self) -> None:
        with self._lock:
            self._socket.disable_monitor()
            self._monitor.close(linger=0)
            self._socket.close(linger=0)
            self._context.term()

    def open(self, request_id: int) -> int:
        """Starts collecting answers to `request_id`; returns the disconnect count now."""
        with self._lock:
            self._mailboxes[request_id] = collections.deque()
            return self.state.disconnects

    def forget(self, request_id: int) -> None:
        with self._lock:
            self._mailboxes.pop(request_id, None)

    def send(self, frame: bytes, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                try:
                    self._socket.send(frame, zmq.NOBLOCK)
                    return
                except zmq.Again:  # the DEALER queues while it connects; wait for room
                    pass
            if time.monotonic() >= deadline:
                raise no_answer(self.endpoint, timeout)
            time.sleep(0.01)

    def wait_reconnected(self, timeout: float) -> None:
        """Waits (at most `timeout` s) until the socket is connected again after
        a loss, so that a job re-sent then is not taken for lost by the late
        events of the old connection. A send meanwhile would queue anyway."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self.state.reconnected() or self.state.refused is not None:
                    return
                self._pump(_SLICE_S)

    def receive(self, request_id: int, timeout: float, since: int) -> pb.Envelope:
        """The next answer to `request_id` (opened), waiting at most `timeout`
        seconds; UnavailableError when the connection is lost meanwhile (it
        was `since` disconnects when the request went out)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                box = self._mailboxes.get(request_id)
                if box:
                    return box.popleft()
                lost = self.state.lost(since)
                if lost is not None:
                    raise lost
                left = deadline - time.monotonic()
                if left <= 0:
                    raise no_answer(self.endpoint, timeout)
                self._pump(min(left, _SLICE_S))

    def _pump(self, wait: float) -> None:
        """Sorts what arrives within `wait` seconds into the mailboxes (lock held)."""
        ready = dict(self._poller.poll(int(wait * 1000) + 1))
        while self._monitor in ready:
            try:
                self.state.on_event(self._monitor.recv_multipart(zmq.NOBLOCK))
            except zmq.Again:
                break
        while True:
            try:
                frames = self._socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            env = decode(frames, self.endpoint)
            box = self._mailboxes.get(env.request_id)
            if box is not None:
                box.append(env)
            elif env.request_id == 0 and env.HasField("error"):
                for other in self._mailboxes.values():
                    other.append(env)
