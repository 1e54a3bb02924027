"""A loopback HTTP proxy that makes every request pay a fixed latency, and counts them.

:class:`LatencyProxy` listens on 127.0.0.1 and forwards each connection to a
server on 127.0.0.1 (a SeaweedFS S3 gateway, nginx).
Each HTTP/1.1 request read from the client is held ``delay`` seconds before
it is sent on, as if the server were that far away; responses come back at
once. So a reader that waits for each answer before asking again pays
``delay`` per request, and one that overlaps its requests pays it once per
overlapped group -- which is what the remote read path is measured on.

Every request's method and path are recorded (:attr:`LatencyProxy.requests`),
so a test can count an epoch's round trips and see which were HEADs.

Not a script: ``remote_latency.py`` and ``tests/remote/test_round_trips.py`` import it.
Nothing here talks to any address but 127.0.0.1; every loop ends when its
socket closes or :meth:`LatencyProxy.stop` is called.
"""

from __future__ import annotations

import dataclasses
import select
import socket
import threading
import time
from urllib.parse import unquote, urlsplit

LOOPBACK = "127.0.0.1"
_MAX_HEADER = 64 * 1024
_POLL = 0.2  # how often a blocked loop looks at the stop flag


@dataclasses.dataclass(frozen=True)
class Request:
    """One request as the proxy saw it: ``method`` and the URL ``path`` (no query, unquoted)."""

    method: str
    path: str
    at: float


class LatencyProxy:
    """127.0.0.1:``port`` -> 127.0.0.1:``upstream_port``, each request held ``delay`` s.

    Use as a context manager or call :meth:`start` and :meth:`stop`.
    """

    def __init__(self, upstream_port: int, delay: float) -> None:
        if delay < 0:
            raise ValueError(f"delay must be >= 0, got {delay}")
        self.upstream_port, self.delay = int(upstream_port), float(delay)
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((LOOPBACK, 0))
        self._listener.listen(64)
        self._listener.settimeout(_POLL)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._requests: list[Request] = []
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def requests(self) -> list[Request]:
        """The requests forwarded so far, in the order they arrived."""
        with self._lock:
            return list(self._requests)

    def reset(self) -> list[Request]:
        """The requests so far, forgetting them (to count the next step alone)."""
        with self._lock:
            done, self._requests = self._requests, []
        return done

    def start(self) -> LatencyProxy:
        self._spawn(self._accept)
        return self

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for s in sockets:
            try:
                s.close()
            except OSError:
                pass
        self._listener.close()
        for t in threads:
            t.join(timeout=5)

    def __enter__(self) -> LatencyProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the loops ------------------------------------------------------------------------

    def _spawn(self, target, *args) -> None:
        t = threading.Thread(target=target, args=args, daemon=True, name="latency-proxy")
        with self._lock:
            self._threads = [x for x in self._threads if x.is_alive()] + [t]
        t.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed by stop()
                return
            try:
                upstream = socket.create_connection((LOOPBACK, self.upstream_port), timeout=5)
            except OSError:
                client.close()  # the server is down: the client sees a reset, as it would without us
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            self._spawn(self._requests_up, client, upstream)
            self._spawn(self._pump, upstream, client)

    def _recv(self, s: socket.socket) -> bytes:
        """The next bytes from ``s``; b"" at its end or when stopping."""
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([s], [], [], _POLL)
                if ready:
                    return s.recv(65536)
            except (OSError, ValueError):
                return b""
        return b""

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        """Responses: copied as they come."""
        try:
            while data := self._recv(src):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _close(src, dst)

    def _requests_up(self, client: socket.socket, upstream: socket.socket) -> None:
        """Requests: each framed (head and Content-Length body), held ``delay`` s, then sent on."""
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    if len(buf) > _MAX_HEADER:
                        return
                    data = self._recv(client)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                method, path, length, chunked = _parse(head)
                while len(buf) < length:
                    data = self._recv(client)
                    if not data:
                        return
                    buf += data
                body, buf = buf[:length], buf[length:]
                with self._lock:
                    self._requests.append(Request(method, path, time.time()))
                if self.delay and self._stop.wait(self.delay):
                    return
                upstream.sendall(head + b"\r\n\r\n" + body)
                if chunked:  # a streamed upload: not framed here, passed on as it comes
                    upstream.sendall(buf)
                    while data := self._recv(client):
                        upstream.sendall(data)
                    return
        except OSError:
            pass
        finally:
            _close(client, upstream)


def _parse(head: bytes) -> tuple[str, str, int, bool]:
    lines = head.decode("latin-1").split("\r\n")
    method, _, rest = lines[0].partition(" ")
    target = rest.rpartition(" ")[0] or rest
    length, chunked = 0, False
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value.strip() or 0)
        elif name == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    return method, unquote(urlsplit(target).path), length, chunked


def _close(*sockets: socket.socket) -> None:
    for s in sockets:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()
