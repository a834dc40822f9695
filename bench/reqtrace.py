#!/usr/bin/env python3
"""bench/reqtrace.py — a diagnostic TLS pass-through between a controller and the API server
that records the request line of every HTTP/1.1 request (method, path, query) it forwards.
Used by `bench.py --trace` to break a controller's API traffic down by verb and resource;
never for the measured numbers (it adds a hop, and forces HTTP/1.1 where a Go client would
use HTTP/2).

    reqtrace.py UPSTREAM_URL CA_FILE LOG_FILE   -> prints "PORT" on stdout, serves until killed

The controller's kubeconfig points at https://127.0.0.1:PORT with insecure-skip-tls-verify
(the proxy's certificate is self-signed, made with openssl at start); the proxy verifies the
API server with CA_FILE. Bytes pass through unchanged, bearer token included.
"""
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

# A request line ends a "line"; it may follow the previous request's body (JSON bodies carry no
# newline), so search at the end rather than match at the start.
REQ = re.compile(rb"(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (/\S*) HTTP/1\.[01]\r?$")


def main():
    upstream, ca, logpath = sys.argv[1:4]
    u = urllib.parse.urlparse(upstream)
    tmp = tempfile.mkdtemp(prefix="reqtrace-")
    crt, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=reqtrace",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", crt],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(crt, key)
    sctx.set_alpn_protocols(["http/1.1"])
    cctx = ssl.create_default_context(cafile=ca)
    cctx.set_alpn_protocols(["http/1.1"])
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(128)
    print(lsock.getsockname()[1], flush=True)
    logf = open(logpath, "a", buffering=1)
    lock = threading.Lock()

    def pump(src, dst, record):
        buf = b""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if record:
                    buf += data
                    *lines, buf = buf.split(b"\n")
                    if len(buf) > 1 << 20:
                        buf = b""
                    for line in lines:
                        m = REQ.search(line)
                        if m:
                            with lock:
                                logf.write(f"{time.time():.3f} {m.group(1).decode()} {m.group(2).decode()}\n")
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def handle(raw):
        try:
            c = sctx.wrap_socket(raw, server_side=True)
            up = cctx.wrap_socket(socket.create_connection((u.hostname, u.port)), server_hostname=u.hostname)
        except OSError:
            raw.close()
            return
        threading.Thread(target=pump, args=(up, c, False), daemon=True).start()
        pump(c, up, True)

    while True:
        raw, _ = lsock.accept()
        threading.Thread(target=handle, args=(raw,), daemon=True).start()


if __name__ == "__main__":
    main()
