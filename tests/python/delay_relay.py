"""A delaying TCP relay: the stand-in for `tc netem` (which this machine's
kernel lacks: "Specified qdisc kind is unknown") in tests that need a slow
link. It listens on 127.0.0.1:PORT and forwards every connection to a target
address, holding each chunk of bytes `delay_ms` before passing it on, in
both directions, in order (a delay line, not a throttle: throughput is kept).

    relay = DelayRelay(target_port, delay_ms=50)   # relay.port is where to dial
    ...
    relay.close()

or as a process of its own in a network namespace (see the end of this file).
"""
import socket
import threading
import time
from collections import deque


class DelayRelay:
    def __init__(self, target_port, delay_ms, target_host="127.0.0.1", listen_host="127.0.0.1"):
        self.target = (target_host, target_port)
        self.delay = delay_ms / 1000.0
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind((listen_host, 0))
        self.server.listen(16)
        self.port = self.server.getsockname()[1]
        self.closed = False
        self.sockets = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sockets += [client, upstream]
            self._pipe(client, upstream)
            self._pipe(upstream, client)

    def _pipe(self, src, dst):
        line = deque()
        ready = threading.Condition()

        def read():
            while True:
                try:
                    data = src.recv(65536)
                except OSError:
                    data = b""
                with ready:
                    line.append((time.monotonic() + self.delay, data))
                    ready.notify()
                if not data:
                    return

        def write():
            while True:
                with ready:
                    while not line:
                        ready.wait()
                    due, data = line.popleft()
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                if not data:
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    return
                try:
                    dst.sendall(data)
                except OSError:
                    return

        threading.Thread(target=read, daemon=True).start()
        threading.Thread(target=write, daemon=True).start()

    def close(self):
        self.closed = True
        self.server.close()
        for s in self.sockets:
            try:
                s.close()
            except OSError:
                pass


if __name__ == "__main__":
    # As a process of its own (in a test's network namespace):
    #   python delay_relay.py LISTEN_HOST TARGET_HOST TARGET_PORT DELAY_MS
    # prints the port it listens on, then relays until killed.
    import sys

    listen_host, target_host, target_port, delay_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    relay = DelayRelay(target_port, delay_ms=delay_ms, target_host=target_host, listen_host=listen_host)
    print(relay.port, flush=True)
    threading.Event().wait()
