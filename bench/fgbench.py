"""Shared pieces of the Python benchmarks (bench/listen.py, bench/edge.py).

- the firegate binary check (release only, unless allow_debug) and the server process, started on
  127.0.0.1 with a raised RLIMIT_NOFILE and stopped (only it) at the end;
- the server's resident memory, from /proc/<pid>/status;
- a minimal keep-alive HTTP/1.1 client on asyncio streams;
- a raw-socket SSE reader on the asyncio loop (`loop.add_reader` + `recvmsg`) that stamps every
  event with the kernel's receive time (SO_TIMESTAMPNS), so latencies do not include the time this
  single Python process takes to get round to a socket when a thousand become readable at once.

Everything is bounded: connections, reads and waits all take timeouts.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from typing import Callable, Optional
from urllib.parse import quote

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)   # Linux, every common architecture


class BenchError(Exception):
    """The run itself failed (exit status 2)."""


def log(msg: str = ""):
    print(msg, flush=True)


def emit(figure: str, value, unit: str, **extra):
    """With BENCH_JSON=1 in the environment (bench/run sets it), prints one machine-readable line
    per figure: `@bench {"figure": …, "value": …, "unit": …, …}`. Otherwise does nothing."""
    if os.environ.get("BENCH_JSON") == "1":
        print("@bench " + json.dumps({"figure": figure, "value": value, "unit": unit, **extra}), flush=True)


# ---------------------------------------------------------------------------------------------
# a script's arguments and exit
# ---------------------------------------------------------------------------------------------

def argument_parser(doc: str):
    """An ArgumentParser with the script's docstring and the options every script takes:
    --bin (FIREGATE_BIN, else .build/release/firegate) and --allow-debug."""
    import argparse
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("FIREGATE_BIN", os.path.join(REPO, ".build/release/firegate")))
    ap.add_argument("--allow-debug", action="store_true", help="run on a debug build (to try the script)")
    return ap


def run_script(main, seconds: float):
    """Runs the coroutine `main()` within `seconds` and exits with its status; a BenchError, a
    timeout or Ctrl-C exit 2 (the run failed)."""
    import sys
    try:
        sys.exit(asyncio.run(asyncio.wait_for(main(), seconds)))
    except BenchError as e:
        print(f"bench: {e}", file=sys.stderr)
        sys.exit(2)
    except asyncio.TimeoutError:
        print("bench: the run ran out of time", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(2)


def run_main(main):
    """Runs the synchronous `main()` and exits with its status; a BenchError exits 2 (the run failed)."""
    import sys
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"bench: {e}", file=sys.stderr)
        sys.exit(2)


# ---------------------------------------------------------------------------------------------
# the binary and the server process
# ---------------------------------------------------------------------------------------------

def build_kind(path: str) -> str:
    """'debug', 'release' or 'unknown', from the path and the build folders named in the binary
    (SwiftPM embeds .build/<triple>/<config>/… paths in both configurations)."""
    real = os.path.realpath(path)
    if "/debug/" in real:
        return "debug"
    if "/release/" in real:
        return "release"
    debug = release = 0
    tail = b""
    with open(real, "rb") as f:
        while True:
            chunk = f.read(1 << 24)
            if not chunk:
                break
            buf = tail + chunk
            debug += len(re.findall(rb"-linux-gnu/debug/", buf))
            release += len(re.findall(rb"-linux-gnu/release/", buf))
            tail = buf[-32:]
    if debug and not release:
        return "debug"
    if release and not debug:
        return "release"
    return "unknown"


def check_binary(path: str, allow_debug: bool) -> str:
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise BenchError(f"no firegate binary at {path} "
                         "(build it with: swift build -c release --static-swift-stdlib --product firegate)")
    kind = build_kind(path)
    if kind == "debug" and not allow_debug:
        raise BenchError(f"{path} is a debug build; benchmark a release build only "
                         "(--allow-debug runs the script anyway, to try it out — its figures mean nothing)")
    return kind


def raise_nofile(wanted: int) -> int:
    """Raises this process's open-file limit to `wanted` (at most the hard limit); returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _server_preexec():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = 1 << 20 if hard == resource.RLIM_INFINITY else hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    os.setpgrp()  # our own process group: a Ctrl-C of the bench does not hit it first


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A firegate process on 127.0.0.1, in memory or on a data dir under bench/out."""

    def __init__(self, binary: str, project: str, durable: bool, label: str = "server", extra_args=()):
        self.extra_args = list(extra_args)
        self.binary = binary
        self.project = project
        self.durable = durable
        self.port = free_port()
        self.host = "127.0.0.1"
        os.makedirs(os.path.join(REPO, "bench", "out"), exist_ok=True)
        self.run_dir = tempfile.mkdtemp(prefix=f"{label}.", dir=os.path.join(REPO, "bench", "out"))
        self.log_path = os.path.join(self.run_dir, "firegate.log")
        self.proc: Optional[subprocess.Popen] = None

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 30.0):
        args = [self.binary, "serve", "--host", self.host, "--port", str(self.port),
                "--project", self.project]
        if self.durable:
            args += ["--data-dir", os.path.join(self.run_dir, "data")]
        else:
            args += ["--in-memory"]
        args += self.extra_args
        self._log = open(self.log_path, "wb")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                     preexec_fn=_server_preexec)
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise BenchError(f"firegate exited early ({self.proc.returncode}): {self.read_log()}")
            try:
                with urllib.request.urlopen(self.base + "/healthz", timeout=1) as r:
                    if r.status == 200:
                        self.start_seconds = time.monotonic() - t0
                        return self
            except OSError:
                time.sleep(0.02)
        raise BenchError("firegate did not answer /healthz within 30 s")

    def read_log(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-4000:].decode(errors="replace")
        except OSError:
            return ""

    def nofile_limit(self) -> Optional[int]:
        try:
            with open(f"/proc/{self.proc.pid}/limits") as f:
                for line in f:
                    if line.startswith("Max open files"):
                        return int(line.split()[3])
        except (OSError, ValueError):
            return None
        return None

    def rss_kib(self) -> int:
        """VmRSS of the server process, KiB."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise BenchError("no VmRSS in /proc/<pid>/status")

    def rss_parts_kib(self) -> dict:
        """The resident set by kind (KiB): RssAnon (heap, stacks), RssFile (mapped code and
        libraries, shared with the page cache), RssShmem."""
        parts = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(("RssAnon:", "RssFile:", "RssShmem:")):
                    parts[line.split(":")[0]] = int(line.split()[1])
        return parts

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def open_fds(self) -> int:
        try:
            return len(os.listdir(f"/proc/{self.proc.pid}/fd"))
        except OSError:
            return -1

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, keep: bool = False):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "_log", None):
            self._log.close()
        if not keep:
            shutil.rmtree(self.run_dir, ignore_errors=True)


def wait_healthy(base: str, proc, seconds: float = 30):
    """Returns once `proc`, a server started at `base`, answers /healthz 200; a server that exits
    or does not answer within `seconds` ends the script."""
    import urllib.request
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"firegate exited: {proc.stderr.read().decode()[-500:]}")
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("firegate did not start")


class BenchPostgres:
    """A PostgreSQL for a benchmark: FIREGATE_TEST_STORE when set (a database to create others
    from), else a throwaway cluster (scripts/postgres-test-cluster.sh), stopped on exit.
    `database()` makes a fresh database and returns its URL."""

    def __enter__(self):
        self.cluster = None
        self.admin = os.environ.get("FIREGATE_TEST_STORE")
        if not self.admin:
            self.cluster = tempfile.mkdtemp(prefix="fg-bench-pgdata-")
            try:
                self.admin = subprocess.run(["bash", os.path.join(REPO, "scripts/postgres-test-cluster.sh"), "start", self.cluster,
                                             str(free_port())], capture_output=True, text=True, check=True).stdout.strip()
            except subprocess.CalledProcessError as failure:
                raise BenchError(f"no PostgreSQL: {failure.stderr.strip()}")
        return self

    def __exit__(self, *exc):
        if self.cluster:
            subprocess.run(["bash", os.path.join(REPO, "scripts/postgres-test-cluster.sh"), "stop", self.cluster], capture_output=True)

    def database(self) -> str:
        import uuid
        name = "fgbench_" + uuid.uuid4().hex[:12]
        subprocess.run(["psql", self.admin, "-Atqc", f'CREATE DATABASE "{name}"'], capture_output=True, check=True)
        head, _, query = self.admin.partition("?")
        return head[:head.index("/", head.index("//") + 2) + 1] + name + ("?" + query if query else "")


async def settle_rss(server: Server, seconds: float = 2.0, step: float = 0.25) -> int:
    """RSS after it stopped moving (up to `seconds`): the largest of the last readings."""
    readings = [server.rss_kib()]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        await asyncio.sleep(step)
        readings.append(server.rss_kib())
    return max(readings[-3:])


# ---------------------------------------------------------------------------------------------
# URLs and bodies
# ---------------------------------------------------------------------------------------------

def docs_root(project: str) -> str:
    return f"/v1/projects/{project}/databases/%28default%29/documents"


def doc_name(project: str, path: str) -> str:
    return f"projects/{project}/databases/(default)/documents/{path}"


def query_param(query: dict) -> str:
    return quote(json.dumps(query, separators=(",", ":")), safe="")


def commit_body(project: str, docs: dict) -> bytes:
    """{path: {field: python int/str/bool}} as one commit of update writes."""
    def enc(v):
        if isinstance(v, bool):
            return {"booleanValue": v}
        if isinstance(v, int):
            return {"integerValue": str(v)}
        return {"stringValue": str(v)}
    writes = [{"update": {"name": doc_name(project, p), "fields": {k: enc(v) for k, v in f.items()}}}
              for p, f in docs.items()]
    return json.dumps({"writes": writes}, separators=(",", ":")).encode()


# ---------------------------------------------------------------------------------------------
# a keep-alive HTTP/1.1 client
# ---------------------------------------------------------------------------------------------

class HttpConn:
    """One keep-alive connection; `request` returns (status, headers, body)."""

    def __init__(self, host: str, port: int, timeout: float = 30.0):
        self.host, self.port, self.timeout = host, port, timeout
        self.reader: Optional[asyncio.StreamReader] = None
        self.writer: Optional[asyncio.StreamWriter] = None

    async def _connect(self):
        self.reader, self.writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, limit=1 << 24), self.timeout)

    def encode(self, method: str, path: str, body: Optional[bytes] = None, headers: Optional[dict] = None) -> bytes:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        for k, v in (headers or {}).items():
            lines.append(f"{k}: {v}")
        if body is not None:
            lines.append("Content-Type: application/json")
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")

    async def request(self, method: str, path: str, body: Optional[bytes] = None, headers: Optional[dict] = None,
                      on_sent: Optional[Callable[[], None]] = None, after_sent: Optional[Callable[[], None]] = None):
        """`on_sent` runs just before the request goes out, `after_sent` just after it was handed
        to the socket (before this loop reads anything)."""
        return await asyncio.wait_for(self._request(method, path, body, headers, on_sent, after_sent), self.timeout)

    async def _request(self, method, path, body, headers, on_sent, after_sent=None):
        data = self.encode(method, path, body, headers)
        for attempt in (0, 1):
            if self.writer is None:
                await self._connect()
            try:
                if on_sent:
                    on_sent()   # the time just before the request goes out
                self.writer.write(data)
                if after_sent:
                    after_sent()
                await self.writer.drain()
                return await self._response()
            except (ConnectionError, asyncio.IncompleteReadError) as e:
                self.close()
                if attempt == 1 or on_sent:
                    raise BenchError(f"{method} {path}: {e!r}") from e
        raise AssertionError("unreachable")

    async def _response(self):
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = bytearray()
            while True:
                size_line = await self.reader.readuntil(b"\r\n")
                size = int(size_line.split(b";")[0], 16)
                if size == 0:
                    await self.reader.readuntil(b"\r\n")
                    break
                body += await self.reader.readexactly(size + 2)
                del body[-2:]
            body = bytes(body)
        else:
            body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, headers, body

    async def json(self, method: str, path: str, body=None, ok=(200,)):
        raw = json.dumps(body, separators=(",", ":")).encode() if body is not None and not isinstance(body, bytes) else body
        status, headers, data = await self.request(method, path, raw)
        if status not in ok:
            raise BenchError(f"{method} {path} -> {status}: {data[:300]!r}")
        return json.loads(data) if data else None

    def close(self):
        if self.writer is not None:
            try:
                self.writer.close()
            except Exception:
                pass
        self.reader = self.writer = None


class ConnPool:
    """A few keep-alive connections shared by many concurrent callers."""

    def __init__(self, host: str, port: int, size: int, timeout: float = 60.0):
        self.queue: asyncio.Queue = asyncio.Queue()
        self.conns = [HttpConn(host, port, timeout) for _ in range(size)]
        for c in self.conns:
            self.queue.put_nowait(c)

    async def json(self, method, path, body=None, ok=(200,)):
        conn = await self.queue.get()
        try:
            return await conn.json(method, path, body, ok)
        finally:
            self.queue.put_nowait(conn)

    def close(self):
        for c in self.conns:
            c.close()


# ---------------------------------------------------------------------------------------------
# a raw-socket SSE reader
# ---------------------------------------------------------------------------------------------

@dataclass
class SSEEvent:
    event: str
    id: Optional[str]
    data: bytes
    kernel_ns: int     # when the kernel received the bytes that completed the event (CLOCK_REALTIME)
    user_ns: int       # when this process read them


class SSEConn:
    """One SSE stream on a raw non-blocking socket read from the asyncio loop.

    `on_event(conn, SSEEvent)` runs for every event; `opened` resolves once the response head
    was read (200 + text/event-stream), `closed` when the stream ends."""

    def __init__(self, host: str, port: int, path: str, on_event: Callable[["SSEConn", SSEEvent], None],
                 method: str = "GET", headers: Optional[dict] = None, tag=None):
        self.host, self.port, self.path, self.method = host, port, path, method
        self.headers = headers or {}
        self.on_event = on_event
        self.tag = tag
        self.sock: Optional[socket.socket] = None
        self.loop = asyncio.get_running_loop()
        self.opened: asyncio.Future = self.loop.create_future()
        self.closed: asyncio.Future = self.loop.create_future()
        self._head = b""
        self._in_body = False
        self._chunk_buf = b""
        self._sse_buf = b""
        self._chunk_left = -1  # -1: expecting a size line
        self.status: Optional[int] = None
        self.error: Optional[str] = None
        self.comments = 0
        self.events = 0
        self.bytes = 0

    async def connect(self, timeout: float = 30.0):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = s
        try:
            await asyncio.wait_for(self.loop.sock_connect(s, (self.host, self.port)), timeout)
            req = [f"{self.method} {self.path} HTTP/1.1", f"Host: {self.host}:{self.port}", "Accept: text/event-stream"]
            req += [f"{k}: {v}" for k, v in self.headers.items()]
            await asyncio.wait_for(self.loop.sock_sendall(s, ("\r\n".join(req) + "\r\n\r\n").encode()), timeout)
        except BaseException:
            self.close()
            raise
        self.loop.add_reader(s.fileno(), self._readable)

    def _readable(self):
        try:
            data, anc, _flags, _addr = self.sock.recvmsg(1 << 18, socket.CMSG_SPACE(16))
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._finish(f"read error: {e!r}")
            return
        user_ns = time.time_ns()
        if not data:
            self._finish("eof")
            return
        kernel_ns = user_ns
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(payload) >= 16:
                sec, nsec = struct.unpack("qq", payload[:16])
                kernel_ns = sec * 1_000_000_000 + nsec
        self.bytes += len(data)
        try:
            self._feed(data, kernel_ns, user_ns)
        except Exception as e:  # a parse error or a failing callback ends this stream, loudly
            self._finish(f"error: {e!r}")

    def _feed(self, data: bytes, kernel_ns: int, user_ns: int):
        if not self._in_body:
            self._head += data
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                return
            head, data = self._head[:end].decode("latin-1"), self._head[end + 4:]
            self._head = b""
            lines = head.split("\r\n")
            self.status = int(lines[0].split()[1])
            hdrs = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
            self.response_headers = hdrs
            self._chunked = hdrs.get("transfer-encoding", "").lower() == "chunked"
            if self.status != 200 or not hdrs.get("content-type", "").startswith("text/event-stream"):
                self.error = f"HTTP {self.status}: {data[:300]!r}"
                if not self.opened.done():
                    self.opened.set_exception(BenchError(f"{self.path[:120]}: {self.error}"))
                self._finish(self.error)
                return
            self._in_body = True
            if not self.opened.done():
                self.opened.set_result(True)
        if self._chunked:
            self._chunk_buf += data
            payload = bytearray()
            while True:
                if self._chunk_left < 0:
                    nl = self._chunk_buf.find(b"\r\n")
                    if nl < 0:
                        break
                    size = int(self._chunk_buf[:nl].split(b";")[0], 16)
                    self._chunk_buf = self._chunk_buf[nl + 2:]
                    if size == 0:
                        self._finish("end of stream")
                        break
                    self._chunk_left = size
                if len(self._chunk_buf) < self._chunk_left + 2:
                    break
                payload += self._chunk_buf[:self._chunk_left]
                self._chunk_buf = self._chunk_buf[self._chunk_left + 2:]
                self._chunk_left = -1
            data = bytes(payload)
        self._sse_buf += data
        while True:
            end = self._sse_buf.find(b"\n\n")
            if end < 0:
                return
            block, self._sse_buf = self._sse_buf[:end], self._sse_buf[end + 2:]
            self._event(block, kernel_ns, user_ns)

    def _event(self, block: bytes, kernel_ns: int, user_ns: int):
        name, ident, data = "message", None, []
        only_comments = True
        for line in block.split(b"\n"):
            if line.startswith(b":"):
                continue
            only_comments = False
            key, _, value = line.partition(b":")
            if value.startswith(b" "):
                value = value[1:]
            if key == b"event":
                name = value.decode()
            elif key == b"id":
                ident = value.decode()
            elif key == b"data":
                data.append(value)
        if only_comments:
            self.comments += 1
            return
        self.events += 1
        self.on_event(self, SSEEvent(name, ident, b"\n".join(data), kernel_ns, user_ns))

    def _finish(self, reason: str):
        if self.sock is not None:
            try:
                self.loop.remove_reader(self.sock.fileno())
            except Exception:
                pass
        if not self.closed.done():
            self.closed.set_result(reason)
        if not self.opened.done():
            self.opened.set_exception(BenchError(f"stream ended before its head: {reason}"))

    def close(self):
        if self.sock is not None:
            try:
                self.loop.remove_reader(self.sock.fileno())
            except Exception:
                pass
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None
        if not self.closed.done():
            self.closed.set_result("closed by us")
        if not self.opened.done():
            self.opened.cancel()


async def gather_limited(coros, limit: int):
    """Runs coroutines with at most `limit` at a time; raises the first failure."""
    sem = asyncio.Semaphore(limit)

    async def one(c):
        async with sem:
            return await c
    return await asyncio.gather(*(one(c) for c in coros))


# ---------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------

def percentile(values, p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def fmt_ms(ns: float) -> str:
    return f"{ns / 1e6:8.2f} ms"


def mib(kib: float) -> str:
    return f"{kib / 1024:.1f} MiB"
