"""A TCP proxy between a client and the head that a test can cut — every
connection through it closed at once, as a dropped link would be — or stall:
the connections stay open but carry nothing more, as a dead cable or a hung
peer. New connections are forwarded again (ZeroMQ reconnects)."""
import socket
import threading


class TcpProxy:
    def __init__(self, upstream_endpoint):
        host, port = upstream_endpoint[len("tcp://"):].rsplit(":", 1)
        self.upstream = (host, int(port))
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.endpoint = f"tcp://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections = 0  # accepted so far
        self.bytes_down = 0   # head -> client, so far
        self._open = []
        self._stalled = set()  # sockets whose data is dropped
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self._closed:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(self.upstream)
            except OSError:
                down.close()
                continue
            with self._lock:
                self.connections += 1
                self._open += [down, up]
            threading.Thread(target=self._pump, args=(down, up, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, down, True), daemon=True).start()

    def _pump(self, src, dst, counted):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if src in self._stalled:
                    continue
                if counted:
                    self.bytes_down += len(data)
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        """Closes every connection through the proxy now."""
        with self._lock:
            conns, self._open = self._open, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def stall(self):
        """From now on, the connections open now carry nothing (but stay open)."""
        with self._lock:
            self._stalled.update(self._open)

    def close(self):
        self._closed = True
        self.cut()
        self.listener.close()
