#!/usr/bin/env python3
"""tests/fake/fake_apiserver.py — a scripted fake Kubernetes API server for fault injection.

Plain HTTP/1.1 on 127.0.0.1 (a random port unless --port), Python stdlib only. Each route
answers with the next step of its script; the last step repeats. Used by
tests/unit/test_rest_faults.c and test_informer_faults.c, which start it themselves.

    fake_apiserver.py --port-file F [--script S.json] [--route 'JSON']... [--port N]
                      [--tls-cert CERT --tls-key KEY]

With --tls-cert/--tls-key it speaks HTTPS (tests/fake/tls/ holds a CA, a server
certificate for the name "fake.test" only, and an unrelated CA).

The port is written to F (atomically) once the server listens. A script is JSON:

    {"routes": [
      {"method": "GET",                       # optional; default: any method
       "path": "/api/v1/namespaces/t/pods",   # exact path (no query)
       "prefix": true,                        # optional: path is a prefix (e.g. ".../events/")
       "query": {"watch": "true"},            # optional: these query params must match
       "absent": ["continue"],                # optional: these query params must be absent
       "auth": "TOKEN",                       # optional: other bearer tokens get a 401 Status
                                              # (no step is used up)
       "steps": [STEP, ...]}                  # answered in turn; the last one repeats
    ]}

--route adds one route (same JSON) after the script's. The first matching route wins; no
match → 404 with a Status body. A STEP is an object:

    status      HTTP status (default 200)
    headers     {"Retry-After": "1", ...}
    body        JSON value (sent as JSON) or, with "raw": true, a string sent as is
    delay       seconds to wait before answering (a stall)
    truncate    send only this many body bytes of a full Content-Length, then close
    reset       close with a TCP RST (after whatever was sent)
    huge        answer with a body of this many bytes ('{"items":[' + spaces), streamed
                with a Content-Length, or chunked (no length known up front) with "chunked"
    events      a watch stream: list of events (objects, sent as one JSON line each) or
                strings (sent verbatim + "\\n"), with chunked transfer encoding
    bytewise    send the stream one byte per chunk, flushing each (odd chunk boundaries)
    byte_delay  seconds between those bytes (default 0.0005)
    end         after the events: "close" (clean end of stream, the default), "drop"
                (close without the final chunk), "reset" (RST), or "hang" (keep the
                connection open, sending nothing, until the client goes away or 60 s)

GET /__log answers with every request seen so far (method, path, query, token = the bearer
token sent or null, t = seconds since start, t_end = when the answer was done) — the tests use it to count retries and check
the resourceVersion of each watch. SIGTERM ends the server at once.
"""
import argparse
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

START = time.monotonic()


def now():
    return round(time.monotonic() - START, 4)


class Route:
    def __init__(self, spec):
        self.method = spec.get("method")
        self.path = spec["path"]
        self.prefix = spec.get("prefix", False)
        self.query = spec.get("query", {})
        self.absent = spec.get("absent", [])
        self.auth = spec.get("auth")
        self.steps = spec.get("steps") or [{"status": 200, "body": {}}]
        self.next = 0

    def matches(self, method, path, query):
        if self.method and self.method != method:
            return False
        if (not path.startswith(self.path)) if self.prefix else self.path != path:
            return False
        for k, v in self.query.items():
            if query.get(k) != v:
                return False
        return not any(k in query for k in self.absent)

    def take(self):
        step = self.steps[min(self.next, len(self.steps) - 1)]
        self.next += 1
        return step


class State:
    def __init__(self, routes):
        self.routes = routes
        self.lock = threading.Lock()
        self.log = []

    def route(self, method, path, query, token):
        with self.lock:
            for r in self.routes:
                if r.matches(method, path, query):
                    if r.auth is not None and token != r.auth:
                        return {"status": 401, "body": {
                            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": "Unauthorized", "reason": "Unauthorized", "code": 401}}
                    return r.take()
        return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-apiserver/1"

    def log_message(self, fmt, *args):  # quiet: the tests read /__log instead
        pass

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # every verb goes through one handler
    def do_GET(self):
        self.serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def serve(self):
        state = self.server.state
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if url.path == "/__log":
            with state.lock:
                data = json.dumps(state.log).encode()
            self.send_json(200, data)
            return
        auth = self.headers.get("Authorization") or ""
        token = auth[7:] if auth.startswith("Bearer ") else None
        entry = {"method": self.command, "path": url.path, "query": query, "t": now(),
                 "body": body.decode("utf-8", "replace"), "token": token}
        with state.lock:
            state.log.append(entry)
        step = state.route(self.command, url.path, query, token)
        try:
            if step is None:
                self.send_json(404, json.dumps({
                    "kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "message": "no fake route for %s %s" % (self.command, url.path),
                    "reason": "NotFound", "code": 404}).encode())
            else:
                self.play(step)
        finally:
            entry["t_end"] = now()

    def send_json(self, status, data, headers=None):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)

    def rst(self):
        """Close with a TCP reset (SO_LINGER 0)."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def play(self, step):
        if step.get("delay"):
            time.sleep(step["delay"])
        status = step.get("status", 200)
        headers = step.get("headers", {})
        if "events" in step:
            self.stream(step, status, headers)
            return
        if "huge" in step:
            self.huge(step["huge"], status, headers, step.get("chunked"))
            return
        body = step.get("body", {})
        data = body.encode() if step.get("raw") else json.dumps(body).encode()
        if "truncate" in step:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: step["truncate"]])
            self.wfile.flush()
            time.sleep(0.05)
            if step.get("reset"):
                self.rst()
            else:
                self.close_connection = True
            return
        self.send_json(status, data, headers)
        if step.get("reset"):
            self.rst()

    def huge(self, size, status, headers, chunked):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(size))
        for k, v in headers.items():
            self.send_header(k, str(v))
        self.end_headers()
        write = self.chunk if chunked else self.wfile.write
        head = b'{"items":['
        block = b" " * (1 << 20)
        try:
            write(head[:size])
            left = size - min(size, len(head))
            while left > 0:
                n = min(left, len(block))
                write(block[:n])
                left -= n
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client gave up: that is the point
        self.close_connection = True

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def stream(self, step, status, headers):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in headers.items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.flush()
        payload = b"".join(
            (e.encode() if isinstance(e, str) else json.dumps(e, separators=(",", ":")).encode())
            + b"\n" for e in step["events"])
        try:
            if step.get("bytewise"):
                delay = step.get("byte_delay", 0.0005)
                for i in range(len(payload)):
                    self.chunk(payload[i:i + 1])
                    if delay:
                        time.sleep(delay)
            elif payload:
                self.chunk(payload)
            end = step.get("end", "close")
            if end == "close":
                self.wfile.write(b"0\r\n\r\n")
            elif end == "drop":
                self.close_connection = True
            elif end == "reset":
                self.rst()
            elif end == "hang":
                self.hang(step.get("hang", 60))
        except OSError:
            self.close_connection = True

    def hang(self, seconds):
        """Hold the stream open until the client closes it (or seconds pass)."""
        deadline = time.monotonic() + seconds
        sock = self.connection
        while time.monotonic() < deadline:
            r, _, _ = select.select([sock], [], [], 0.1)
            if r:
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        break
                except OSError:
                    break
        self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # a client that gave up mid-answer (timeouts, huge bodies) is expected


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--script")
    ap.add_argument("--route", action="append", default=[])
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    a = ap.parse_args()

    specs = []
    if a.script:
        with open(a.script) as f:
            specs += json.load(f).get("routes", [])
    specs += [json.loads(r) for r in a.route]
    srv = Server(("127.0.0.1", a.port), Handler)
    srv.state = State([Route(s) for s in specs])
    if a.tls_cert:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls_cert, a.tls_key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))

    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, a.port_file)
    try:
        srv.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
