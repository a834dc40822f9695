#!/usr/bin/env python3
"""yao-bridge end-to-end tests: the real binary against real peers.

Every case starts tests/bridge/peer.c (a one-connection Unix/TCP/TLS server that records
every payload byte it received and sent) and runs yao-bridge against it, then compares
bytes: what went into the bridge's stdin with what the peer received, what the peer sent
with what came out of the bridge's stdout. Errors are checked to be exactly one line on
stderr. TLS certificates are made with the openssl CLI in a temporary directory.

    bridge_tests.py --bridge BIN --peer BIN [--grpcpeer BIN] [--only a,b] [--valgrind VALGRIND] [--list]

The grpc_* cases run the bridge's grpc mode against tests/bridge/grpcpeer, a real grpc-go
server generated from tests/bridge/grpcpeer/yao.proto (built by its build.sh).

Prints one line per case and closes with "N passed, N failed"; exits 1 on any failure.
With --valgrind every bridge run is wrapped in valgrind --leak-check=full and a run that
reports an error or a leak fails its case.
"""
import argparse
import glob
import hashlib
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback


class Fail(Exception):
    pass


class Skip(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def one_line_error(err, *needles):
    """stderr must be exactly 'yao-bridge: ...\\n' containing every needle."""
    text = err.decode("utf-8", "replace")
    check(text.startswith("yao-bridge: ") and text.endswith("\n") and text.count("\n") == 1,
          "stderr is not one 'yao-bridge: ...' line: %r" % text)
    for n in needles:
        check(n in text, "stderr %r lacks %r" % (text.strip(), n))
    return text.strip()


MCP_INITIALIZE = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
                  b'"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"1.0"}}}\n')
MCP_INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
MCP_TOOLS_LIST = b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}\n'
# UTF-8, an escaped quote, \u2028 and a backslash: the bridge must not touch any of it.
MCP_TOOLS_CALL = ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo",'
                  '"arguments":{"text":"h\u00e9llo \u2713 \\"q\\" \\u2028 back\\\\slash \U0001F600"}}}\n'
                  ).encode("utf-8")
MCP_SESSION = [MCP_INITIALIZE, MCP_INITIALIZED, MCP_TOOLS_LIST, MCP_TOOLS_CALL]


class Peer:
    """One tests/bridge/peer.c process and the files it writes."""

    def __init__(self, t, listen, *extra):
        self.t = t
        d = t.mkdir("peer")
        self.record, self.sent, self.events = (os.path.join(d, n) for n in ("record", "sent", "events"))
        self.ready = os.path.join(d, "ready")
        self.stderr_path = os.path.join(d, "stderr")
        cmd = [t.args.peer] + list(listen) + ["--ready", self.ready, "--record", self.record,
                                              "--sent", self.sent, "--events", self.events,
                                              "--timeout", str(int(120 * t.slow))] + list(extra)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(self.stderr_path, "wb"))
        t.cleanups.append(self.kill)
        deadline = time.time() + 10
        while not os.path.exists(self.ready):
            if self.proc.poll() is not None or time.time() > deadline:
                raise Fail("peer did not start: %s" % self.stderr())
            time.sleep(0.02)
        with open(self.ready) as f:
            self.port = f.read().strip()

    def stderr(self):
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace").strip()

    def wait(self):
        try:
            rc = self.proc.wait(timeout=30 * self.t.slow)
        except subprocess.TimeoutExpired:
            raise Fail("peer did not finish; events: %s" % self.event_list())
        check(rc == 0, "peer exited %d: %s" % (rc, self.stderr()))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def read(self, path):
        with open(path, "rb") as f:
            return f.read()

    def received(self):
        return self.read(self.record)

    def sent_bytes(self):
        return self.read(self.sent) if os.path.exists(self.sent) else b""

    def event_list(self):
        return self.read(self.events).decode("utf-8", "replace").splitlines()


class Bridge:
    """A running yao-bridge with pipes, for interactive exchanges."""

    def __init__(self, t, argv, env, **kw):
        self.t = t
        self.proc = subprocess.Popen(t.bridge_cmd(argv), env=t.bridge_env(env), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
        t.cleanups.append(self.kill)
        self.buf = b""
        self.out = b""

    def send(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read_line(self, timeout=10):
        deadline = time.time() + timeout * self.t.slow
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                raise Fail("no line from the bridge within %ss (have %r)" % (timeout, self.buf))
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise Fail("bridge stdout closed early (have %r)" % self.buf)
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        self.out += line + b"\n"
        return line + b"\n"

    def finish(self, timeout=20):
        """Close stdin, collect the rest of stdout and stderr, return the exit status."""
        if self.proc.stdin:
            self.proc.stdin.close()
            self.proc.stdin = None
        try:
            rest, err = self.proc.communicate(timeout=timeout * self.t.slow)
        except subprocess.TimeoutExpired:
            raise Fail("bridge did not exit after stdin EOF")
        self.out += self.buf + rest
        self.buf = b""
        self.err = err
        self.t.check_valgrind()
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class T:
    """Per-case context: temp dir, helpers, cleanups."""

    def __init__(self, args, root, name):
        self.args = args
        self.dir = tempfile.mkdtemp(prefix=name + ".", dir=root)
        self.root = root
        self.cleanups = []
        self.slow = 6 if args.valgrind else 1
        self.vglogs = os.path.join(self.dir, "valgrind")

    def mkdir(self, name):
        d = tempfile.mkdtemp(prefix=name + ".", dir=self.dir)
        return d

    def path(self, name):
        return os.path.join(self.dir, name)

    def bridge_cmd(self, argv):
        cmd = [self.args.bridge] + list(argv)
        if self.args.valgrind:
            os.makedirs(self.vglogs, exist_ok=True)
            cmd = [self.args.valgrind, "--quiet", "--error-exitcode=99", "--leak-check=full",
                   "--errors-for-leak-kinds=definite,indirect,possible",
                   "--show-leak-kinds=definite,indirect,possible",
                   "--log-file=" + os.path.join(self.vglogs, "vg.%p.log")] + cmd
        return cmd

    def bridge_env(self, extra):
        # Most cases talk to a plaintext peer on loopback, which the bridge refuses to send
        # a token to unless allowed: they run with YAO_BRIDGE_ALLOW_INSECURE=1. A case that
        # tests the refusal passes YAO_BRIDGE_ALLOW_INSECURE=None (removed).
        env = {k: v for k, v in os.environ.items() if not k.startswith("YAO_")}
        env["YAO_BRIDGE_ALLOW_INSECURE"] = "1"
        env.update(extra or {})
        return {k: v for k, v in env.items() if v is not None}

    def check_valgrind(self):
        if not self.args.valgrind:
            return
        for log in glob.glob(os.path.join(self.vglogs, "*.log")):
            with open(log) as f:
                text = f.read().strip()
            check(not text, "valgrind reported:\n" + text)

    def run(self, argv=(), env=None, stdin=b"", timeout=30, stdin_file=None, stdout_file=None):
        """Run the bridge to completion; returns (rc, stdout, stderr)."""
        kw = {}
        if stdin_file:
            kw["stdin"] = open(stdin_file, "rb")
            stdin = None
        else:
            kw["stdin"] = subprocess.PIPE
        kw["stdout"] = open(stdout_file, "wb") if stdout_file else subprocess.PIPE
        p = subprocess.Popen(self.bridge_cmd(argv), env=self.bridge_env(env), stderr=subprocess.PIPE, **kw)
        self.cleanups.append(lambda: p.poll() is None and (p.kill(), p.wait()))
        try:
            out, err = p.communicate(stdin, timeout=timeout * self.slow)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise Fail("bridge did not exit within %ss" % (timeout * self.slow))
        self.check_valgrind()
        check(p.returncode != 99 or not self.args.valgrind, "valgrind error exit")
        return p.returncode, out or b"", err

    def certs(self):
        """Self-signed certificates, made once per run: 'good' names localhost, 127.0.0.1
        and ::1; 'other' names only other.example."""
        d = os.path.join(self.root, "certs")
        if not os.path.exists(os.path.join(d, "done")):
            openssl = shutil.which("openssl")
            if not openssl:
                raise Skip("openssl CLI not found")
            os.makedirs(d, exist_ok=True)
            for name, cn, san in (("good", "localhost", "DNS:localhost,IP:127.0.0.1,IP:::1"),
                                  ("other", "other.example", "DNS:other.example")):
                subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                                "-keyout", os.path.join(d, name + ".key"),
                                "-out", os.path.join(d, name + ".crt"),
                                "-subj", "/CN=" + cn, "-addext", "subjectAltName=" + san],
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            open(os.path.join(d, "done"), "w").close()
        return {n: (os.path.join(d, n + ".crt"), os.path.join(d, n + ".key")) for n in ("good", "other")}


def lines(data):
    return data.splitlines(keepends=True)


def response_ids(data):
    ids = []
    for ln in lines(data):
        s = ln.decode("utf-8")
        if '"id":' in s:
            ids.append(int(s.split('"id":', 1)[1].split(",", 1)[0]))
    return ids


def sha(b):
    return hashlib.sha256(b).hexdigest()


# ---- the cases ------------------------------------------------------------------------

CASES = []


def case(desc):
    def deco(fn):
        CASES.append((fn.__name__, desc, fn))
        return fn
    return deco


@case("--help and --version print to stdout and exit 0; a bad option or extra argument is "
      "one usage line and exit 2")
def cli_help_version(t):
    rc, out, err = t.run(["--help"])
    check(rc == 0 and b"usage: yao-bridge" in out and b"YAO_IPC_MODE" in out and not err,
          "--help: rc=%d err=%r" % (rc, err))
    rc, out, err = t.run(["--version"])
    check(rc == 0 and out.startswith(b"yao-bridge ") and not err, "--version: rc=%d out=%r" % (rc, out))
    rc, out, err = t.run(["--bogus"])
    check(rc == 2 and not out, "--bogus: rc=%d" % rc)
    one_line_error(err, "unknown option '--bogus'")
    rc, out, err = t.run(["/a.sock", "/b.sock"])
    check(rc == 2, "two paths: rc=%d" % rc)
    one_line_error(err, "one SOCKET_PATH expected")
    rc, out, err = t.run([])
    check(rc == 2, "no address: rc=%d" % rc)
    one_line_error(err, "no socket given")


@case("MCP initialize / notifications/initialized / tools/list / tools/call over a Unix "
      "socket, one request at a time; byte-exact both ways; exit 0 after stdin EOF")
def unix_mcp_exchange(t):
    sock = t.path("yao.sock")
    peer = Peer(t, ["--unix", sock])
    b = Bridge(t, [sock], {})
    b.send(MCP_INITIALIZE)
    check(response_ids(b.read_line()) == [1], "initialize: wrong response")
    b.send(MCP_INITIALIZED)           # a notification: no response expected
    b.send(MCP_TOOLS_LIST)
    check(response_ids(b.read_line()) == [2], "tools/list: a response to the notification came first?")
    b.send(MCP_TOOLS_CALL)
    resp = b.read_line()
    check(response_ids(resp) == [3], "tools/call: wrong response")
    check("h\u00e9llo \u2713 \\\"q\\\" \\u2028 back\\\\slash \U0001F600".encode("utf-8") in resp,
          "tools/call: text changed in transit: %r" % resp)
    rc = b.finish()
    check(rc == 0, "bridge exit %d: %r" % (rc, b.err))
    check(b.err == b"", "stderr not empty: %r" % b.err)
    peer.wait()
    sent = b"".join(MCP_SESSION)
    check(peer.received() == sent, "peer received %r, bridge was given %r" % (peer.received(), sent))
    check(peer.sent_bytes() == b.out, "bridge wrote %r, peer sent %r" % (b.out, peer.sent_bytes()))
    ev = peer.event_list()
    check("notification notifications/initialized" in ev and "eof" in ev, "peer events: %s" % ev)


@case("half-close: on stdin EOF the peer sees EOF, can still send its final reply, and the "
      "bridge exits 0 only after writing it")
def unix_half_close(t):
    sock = t.path("yao.sock")
    peer = Peer(t, ["--unix", sock], "--defer", "tools/call")
    rc, out, err = t.run([sock], stdin=b"".join(MCP_SESSION))
    check(rc == 0 and err == b"", "bridge exit %d: %r" % (rc, err))
    peer.wait()
    ev = peer.event_list()
    check(ev.index("eof") < ev.index("sent-deferred") < ev.index("closed"),
          "peer did not see EOF before its final reply: %s" % ev)
    check(response_ids(out) == [1, 2, 3], "responses: %r" % out)
    check(out == peer.sent_bytes(), "stdout differs from what the peer sent")
    check(peer.received() == b"".join(MCP_SESSION), "peer received different bytes")


@case("the peer closing first ends the bridge (exit 0) while its stdin is still open")
def unix_peer_closes_first(t):
    sock = t.path("yao.sock")
    peer = Peer(t, ["--unix", sock], "--close-after", "1")
    b = Bridge(t, [sock], {})
    b.send(MCP_INITIALIZE)
    check(response_ids(b.read_line()) == [1], "initialize: wrong response")
    try:
        b.proc.wait(timeout=10 * t.slow)
    except subprocess.TimeoutExpired:
        raise Fail("bridge still running 10s after the peer closed")
    rc = b.finish()
    check(rc == 0 and b.err == b"", "bridge exit %d: %r" % (rc, b.err))
    peer.wait()
    check(b.out == peer.sent_bytes(), "stdout differs from what the peer sent")


@case("10 MB of random binary through a Unix socket, stdin and stdout both pipes: echoed "
      "back with no loss (sha256 of input = peer's record = output)")
def unix_10mb_binary(t):
    sock = t.path("yao.sock")
    peer = Peer(t, ["--unix", sock], "--mode", "echo")
    data = os.urandom(10 * 1024 * 1024)
    rc, out, err = t.run([sock], stdin=data, timeout=60)
    check(rc == 0 and err == b"", "bridge exit %d: %r" % (rc, err))
    peer.wait()
    check(sha(peer.received()) == sha(data), "peer received %d bytes, sha mismatch" % len(peer.received()))
    check(sha(out) == sha(data), "stdout has %d bytes, sha mismatch" % len(out))


@case("stdin/stdout are socketpairs, as Node/libuv (Claude CLI) spawns stdio servers: MCP "
      "session, half-close via shutdown(SHUT_WR) on the stdin socket, byte-exact, exit 0")
def stdio_socketpairs(t):
    sock = t.path("yao.sock")
    peer = Peer(t, ["--unix", sock], "--defer", "tools/call")
    in_parent, in_child = socket.socketpair()
    out_parent, out_child = socket.socketpair()
    p = subprocess.Popen(t.bridge_cmd([sock]), env=t.bridge_env({}), stdin=in_child.fileno(),
                         stdout=out_child.fileno(), stderr=subprocess.PIPE)
    in_child.close()
    out_child.close()
    t.cleanups.append(lambda: p.poll() is None and (p.kill(), p.wait()))
    in_parent.sendall(b"".join(MCP_SESSION))
    in_parent.shutdown(socket.SHUT_WR)          # what libuv does on stdin.end()
    out_parent.settimeout(20 * t.slow)
    out = b""
    while True:
        chunk = out_parent.recv(65536)
        if not chunk:
            break
        out += chunk
    err = p.stderr.read()
    rc = p.wait(timeout=10 * t.slow)
    t.check_valgrind()
    check(rc == 0 and err == b"", "bridge exit %d: %r" % (rc, err))
    peer.wait()
    check(response_ids(out) == [1, 2, 3] and out == peer.sent_bytes(), "stdout: %r" % out)
    check(peer.received() == b"".join(MCP_SESSION), "peer received different bytes")


@case("O_NONBLOCK, set on stdin/stdout pipes for the run, is restored at exit (the parent "
      "shares those open file descriptions)")
def stdio_flags_restored(t):
    import fcntl
    sock = t.path("yao.sock")
    peer = Peer(t, ["--unix", sock], "--mode", "sink")
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.write(in_w, b"ping\n")
    os.close(in_w)
    p = subprocess.Popen(t.bridge_cmd([sock]), env=t.bridge_env({}), stdin=in_r, stdout=out_w,
                         stderr=subprocess.PIPE)
    err = p.communicate(timeout=20 * t.slow)[1]
    t.check_valgrind()
    check(p.returncode == 0 and err == b"", "bridge exit %d: %r" % (p.returncode, err))
    for name, fd in (("stdin", in_r), ("stdout", out_w)):
        check(not fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK, "%s left non-blocking" % name)
    os.close(out_w)
    check(os.read(out_r, 100) == b'{"received":5}\n', "unexpected output")
    os.close(in_r)
    os.close(out_r)
    peer.wait()


@case("peer absent: socket path does not exist -> exit 1, one line "
      "'yao-bridge: connect unix:PATH: No such file or directory'")
def peer_absent(t):
    sock = t.path("missing.sock")
    rc, out, err = t.run([sock])
    check(rc == 1 and out == b"", "rc=%d" % rc)
    line = one_line_error(err)
    check(line == "yao-bridge: connect unix:%s: No such file or directory" % sock, "got %r" % line)


@case("socket file exists but nobody listens -> exit 1, 'Connection refused'")
def unix_no_listener(t):
    sock = t.path("stale.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(sock)
    s.close()
    rc, out, err = t.run([sock])
    check(rc == 1, "rc=%d" % rc)
    one_line_error(err, "connect unix:%s: Connection refused" % sock)


@case("YAO_IPC_MODE=socket + YAO_IPC_ADDR, and a Linux abstract socket '@name': bytes in, "
      "peer's reply after EOF out")
def env_socket_mode(t):
    for addr in (t.path("env.sock"), "@yao-bridge-test-%d" % os.getpid()):
        peer = Peer(t, ["--unix", addr], "--mode", "sink")
        rc, out, err = t.run([], {"YAO_IPC_MODE": "socket", "YAO_IPC_ADDR": addr}, stdin=MCP_INITIALIZE)
        check(rc == 0 and err == b"", "%s: bridge exit %d: %r" % (addr, rc, err))
        peer.wait()
        check(peer.received() == MCP_INITIALIZE, "%s: peer got %r" % (addr, peer.received()))
        check(out == b'{"received":%d}\n' % len(MCP_INITIALIZE), "%s: stdout %r" % (addr, out))


@case("stdout closed by its reader -> exit 1 with one line about stdout, no hang: (a) reader "
      "gone before any output, (b) reader closes mid-stream (EPIPE on write)")
def stdout_closed_by_reader(t):
    blob = t.path("blob")
    with open(blob, "wb") as f:
        f.write(os.urandom(8 * 1024 * 1024))
    for variant in ("before", "mid-stream"):
        sock = t.path("yao-%s.sock" % variant)
        peer = Peer(t, ["--unix", sock], "--mode", "send:" + blob)
        r, w = os.pipe()
        if variant == "before":
            os.close(r)
        p = subprocess.Popen(t.bridge_cmd([sock]), env=t.bridge_env({}), stdin=subprocess.PIPE,
                             stdout=w, stderr=subprocess.PIPE)
        os.close(w)
        t.cleanups.append(lambda p=p: p.poll() is None and (p.kill(), p.wait()))
        if variant == "mid-stream":
            got = 0
            while got < 256 * 1024:
                chunk = os.read(r, 65536)
                check(chunk, "bridge stdout ended early")
                got += len(chunk)
            os.close(r)
        try:
            err = p.communicate(timeout=20 * t.slow)[1]   # stdin stays open until it exits
        except subprocess.TimeoutExpired:
            raise Fail("%s: bridge did not exit with its stdout reader gone" % variant)
        t.check_valgrind()
        check(p.returncode == 1, "%s: rc=%d" % (variant, p.returncode))
        # Mid-stream the bridge meets the closed pipe either in write() (EPIPE) or, if it
        # was idle at that moment, as POLLERR on stdout; both must end the run.
        one_line_error(err, "write stdout: the reader closed it" if variant == "before" else "write stdout: ")
        peer.wait()


@case("backpressure: 4 MB echoed while stdout is read slowly in small pieces; nothing lost, "
      "nothing reordered")
def unix_slow_reader(t):
    sock = t.path("yao.sock")
    peer = Peer(t, ["--unix", sock], "--mode", "echo")
    data = os.urandom(4 * 1024 * 1024)
    p = subprocess.Popen(t.bridge_cmd([sock]), env=t.bridge_env({}), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t.cleanups.append(lambda: p.poll() is None and (p.kill(), p.wait()))
    import threading

    def feed():
        p.stdin.write(data)
        p.stdin.close()
    th = threading.Thread(target=feed, daemon=True)
    th.start()
    out = bytearray()
    fd = p.stdout.fileno()
    deadline = time.time() + 60 * t.slow
    while time.time() < deadline:
        chunk = os.read(fd, 16384)
        if not chunk:
            break
        out += chunk
        if len(out) % (256 * 1024) < 16384:
            time.sleep(0.02)      # stall now and then: the pipe fills, the bridge must wait
    th.join(5)
    err = p.stderr.read()
    rc = p.wait(timeout=10 * t.slow)
    t.check_valgrind()
    check(rc == 0 and err == b"", "bridge exit %d: %r" % (rc, err))
    peer.wait()
    check(len(out) == len(data) and sha(bytes(out)) == sha(data),
          "stdout has %d of %d bytes / sha mismatch" % (len(out), len(data)))


def tcp_peer(t, *extra, token="s3cret-token.v1", host="127.0.0.1", tls=None):
    listen = ["--tcp", "%s:0" % (("[%s]" % host) if ":" in host else host), "--token", token]
    if tls:
        listen += ["--tls", tls[0], tls[1]]
    return Peer(t, listen, *extra)


GREETING = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}\n'


@case("TCP mode with YAO_TOKEN: handshake line accepted, the ack is not forwarded, payload "
      "sent right behind the ack in the same segment is; MCP exchange byte-exact")
def tcp_mcp_exchange(t):
    peer = tcp_peer(t, "--greet", GREETING.decode())
    env = {"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "127.0.0.1:" + peer.port, "YAO_TOKEN": "s3cret-token.v1"}
    rc, out, err = t.run([], env, stdin=b"".join(MCP_SESSION))
    check(rc == 0 and err == b"", "bridge exit %d: %r" % (rc, err))
    peer.wait()
    check(out.startswith(GREETING) and response_ids(out[len(GREETING):]) == [1, 2, 3], "stdout: %r" % out)
    check(b'"ok"' not in out, "handshake ack leaked into stdout")
    check(out == peer.sent_bytes(), "stdout differs from what the peer sent")
    check(peer.received() == b"".join(MCP_SESSION), "peer received %r" % peer.received())
    check("token-ok" in peer.event_list(), "peer events: %s" % peer.event_list())


@case("TCP mode with YAO_TOKEN_FILE (trailing newline ignored) and 'localhost' resolution")
def tcp_token_file(t):
    peer = tcp_peer(t, "--mode", "sink")
    tok = t.path("token")
    with open(tok, "w") as f:
        f.write("s3cret-token.v1\n")
    env = {"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "localhost:" + peer.port, "YAO_TOKEN_FILE": tok}
    rc, out, err = t.run([], env, stdin=b"x" * 1000)
    peer.wait()
    check(rc == 0 and err == b"", "bridge exit %d: %r" % (rc, err))
    check(out == b'{"received":1000}\n', "stdout: %r" % out)


@case("wrong token: the peer answers ok:false and closes -> exit 3, one line naming the "
      "peer and its reason; no payload reaches the peer, nothing reaches stdout")
def tcp_wrong_token(t):
    peer = tcp_peer(t)
    env = {"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "127.0.0.1:" + peer.port, "YAO_TOKEN": "wrong"}
    rc, out, err = t.run([], env, stdin=MCP_INITIALIZE)
    peer.wait()
    check(rc == 3 and out == b"", "rc=%d out=%r" % (rc, out))
    one_line_error(err, "tcp:127.0.0.1:%s refused the token: invalid token" % peer.port)
    check(peer.received() == b"", "payload reached the peer: %r" % peer.received())
    check(any(e.startswith("token-refused") for e in peer.event_list()), "peer events: %s" % peer.event_list())


@case("wrong token, peer just closes without an answer -> exit 1, one line saying it closed "
      "during the handshake")
def tcp_refused_by_close(t):
    peer = tcp_peer(t, "--refuse-by-close")
    env = {"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "127.0.0.1:" + peer.port, "YAO_TOKEN": "wrong"}
    rc, out, err = t.run([], env, stdin=MCP_INITIALIZE)
    peer.wait()
    check(rc == 1 and out == b"", "rc=%d" % rc)
    one_line_error(err, "closed the connection during the token handshake")


@case("a TCP peer that never answers the handshake -> exit 1 after YAO_IPC_TIMEOUT")
def tcp_handshake_timeout(t):
    peer = Peer(t, ["--tcp", "127.0.0.1:0"])   # plain MCP peer, knows no handshake
    env = {"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "127.0.0.1:" + peer.port, "YAO_TOKEN": "t",
           "YAO_IPC_TIMEOUT": "1"}
    start = time.time()
    rc, out, err = t.run([], env, stdin=MCP_INITIALIZE)
    check(rc == 1 and time.time() - start < 10 * t.slow, "rc=%d" % rc)
    one_line_error(err, "no handshake reply within 1000 ms")
    peer.kill()


@case("configuration errors are one line and exit 2: tcp without token, bad address, "
      "unknown mode, TLS options without TLS or in socket mode, bad timeout")
def config_errors(t):
    cases = [
        ({"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "127.0.0.1:1"}, "tcp mode needs a token"),
        ({"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "::1:80", "YAO_TOKEN": "t"}, "bad address ::1:80"),
        ({"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "host:99999", "YAO_TOKEN": "t"}, "bad address"),
        ({"YAO_IPC_MODE": "tcp", "YAO_TOKEN": "t"}, "needs YAO_IPC_ADDR"),
        ({"YAO_IPC_MODE": "grpc", "YAO_IPC_ADDR": "h:1"}, "YAO_IPC_MODE=grpc needs YAO_GRPC_ADDR"),
        ({"YAO_IPC_MODE": "h2"}, "YAO_IPC_MODE=h2 is not supported"),
        ({"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "h:1", "YAO_TOKEN": "t", "YAO_IPC_INSECURE": "1"},
         "need YAO_IPC_TLS=1"),
        ({"YAO_IPC_MODE": "socket", "YAO_IPC_ADDR": "/x", "YAO_IPC_TLS": "1"}, "tcp mode only"),
        ({"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "h:1", "YAO_TOKEN": "t", "YAO_IPC_TLS": "maybe"},
         "YAO_IPC_TLS=maybe"),
        ({"YAO_IPC_ADDR": "/x", "YAO_IPC_TIMEOUT": "0"}, "YAO_IPC_TIMEOUT=0"),
        ({"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "h:1", "YAO_TOKEN_FILE": t.path("nope")}, "read token file"),
    ]
    for env, needle in cases:
        rc, out, err = t.run([], env)
        check(rc == 2, "%s: rc=%d err=%r" % (env, rc, err))
        one_line_error(err, needle)


@case("TCP port with nothing listening -> exit 1, 'connect tcp:127.0.0.1:PORT: Connection refused'")
def tcp_connection_refused(t):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))       # held, never listening: the port stays closed
    port = s.getsockname()[1]
    rc, out, err = t.run([], {"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "127.0.0.1:%d" % port, "YAO_TOKEN": "t"})
    s.close()
    check(rc == 1, "rc=%d" % rc)
    line = one_line_error(err)
    check(line == "yao-bridge: connect tcp:127.0.0.1:%d: Connection refused" % port, "got %r" % line)


@case("TCP over IPv6 with a bracketed [::1]:port address")
def tcp_ipv6(t):
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
        s.close()
    except OSError as e:
        raise Skip("no IPv6 loopback: %s" % e)
    peer = tcp_peer(t, host="::1")
    env = {"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "[::1]:" + peer.port, "YAO_TOKEN": "s3cret-token.v1"}
    rc, out, err = t.run([], env, stdin=b"".join(MCP_SESSION))
    peer.wait()
    check(rc == 0 and err == b"", "bridge exit %d: %r" % (rc, err))
    check(response_ids(out) == [1, 2, 3] and out == peer.sent_bytes(), "stdout: %r" % out)


def tls_env(peer, addr_host="localhost", ca=None, token="s3cret-token.v1", **extra):
    env = {"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "%s:%s" % (addr_host, peer.port), "YAO_IPC_TLS": "1",
           "YAO_TOKEN": token}
    if ca:
        env["YAO_IPC_CA"] = ca
    env.update(extra)
    return env


@case("TLS 1.3 with YAO_IPC_CA and name 'localhost': MCP exchange byte-exact; on stdin EOF "
      "the close_notify half-close lets the peer see EOF and still send its final reply")
def tls_mcp_half_close(t):
    c = t.certs()
    peer = tcp_peer(t, "--defer", "tools/call", tls=c["good"])
    rc, out, err = t.run([], tls_env(peer, ca=c["good"][0]), stdin=b"".join(MCP_SESSION))
    check(rc == 0 and err == b"", "bridge exit %d: %r" % (rc, err))
    peer.wait()
    ev = peer.event_list()
    check("tls TLSv1.3" in ev and "token-ok" in ev, "peer events: %s" % ev)
    check(ev.index("eof") < ev.index("sent-deferred"), "peer did not see EOF before its final reply: %s" % ev)
    check(response_ids(out) == [1, 2, 3] and out == peer.sent_bytes(), "stdout: %r" % out)
    check(peer.received() == b"".join(MCP_SESSION), "peer received different bytes")


@case("a token is never sent over plain TCP unless YAO_BRIDGE_ALLOW_INSECURE=1: tcp and grpc "
      "modes exit 2 with one line, before connecting; TLS needs no permission")
def token_needs_tls(t):
    peer = Peer(t, ["--tcp", "127.0.0.1:0", "--token", "s3cret"])
    for env, tls_var in (({"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "127.0.0.1:" + peer.port, "YAO_TOKEN": "s3cret"},
                          "YAO_IPC_TLS"),
                         ({"YAO_IPC_MODE": "grpc", "YAO_GRPC_ADDR": "127.0.0.1:" + peer.port, "YAO_TOKEN": "s3cret",
                           "YAO_SANDBOX_ID": "s"}, "YAO_GRPC_TLS")):
        for off in (None, "0"):
            env["YAO_BRIDGE_ALLOW_INSECURE"] = off
            rc, out, err = t.run([], env, stdin=MCP_INITIALIZE)
            check(rc == 2 and out == b"", "%s: rc=%d out=%r" % (env["YAO_IPC_MODE"], rc, out))
            one_line_error(err, "refusing to send the token over plain TCP to 127.0.0.1:%s: set %s=1 (TLS), "
                           "or YAO_BRIDGE_ALLOW_INSECURE=1" % (peer.port, tls_var))
    env["YAO_BRIDGE_ALLOW_INSECURE"] = "perhaps"
    rc, out, err = t.run([], env, stdin=MCP_INITIALIZE)
    check(rc == 2, "rc=%d" % rc)
    one_line_error(err, "YAO_BRIDGE_ALLOW_INSECURE=perhaps: want 1 or 0")
    got = peer.received() if os.path.exists(peer.record) else b""
    check(got == b"", "the peer received %r" % got)
    peer.kill()
    c = t.certs()
    tpeer = tcp_peer(t, "--mode", "sink", tls=c["good"])
    rc, out, err = t.run([], dict(tls_env(tpeer, "127.0.0.1", ca=c["good"][0]), YAO_BRIDGE_ALLOW_INSECURE=None),
                         stdin=b"abc\n")
    tpeer.wait()
    check(rc == 0 and out == b'{"received":4}\n', "TLS without the permission: rc=%d out=%r err=%r" % (rc, out, err))


@case("TLS to an IP literal (127.0.0.1) is checked against the certificate's IP SAN")
def tls_ip_san(t):
    c = t.certs()
    peer = tcp_peer(t, "--mode", "sink", tls=c["good"])
    rc, out, err = t.run([], tls_env(peer, "127.0.0.1", ca=c["good"][0]), stdin=b"abc\n")
    peer.wait()
    check(rc == 0 and err == b"" and out == b'{"received":4}\n', "rc=%d out=%r err=%r" % (rc, out, err))


@case("10 MB of random binary echoed through TLS, stdin and stdout regular files: no loss "
      "(sha256 both directions)")
def tls_10mb_binary(t):
    c = t.certs()
    peer = tcp_peer(t, "--mode", "echo", tls=c["good"])
    src, dst = t.path("in.bin"), t.path("out.bin")
    data = os.urandom(10 * 1024 * 1024)
    with open(src, "wb") as f:
        f.write(data)
    rc, _, err = t.run([], tls_env(peer, ca=c["good"][0]), stdin_file=src, stdout_file=dst, timeout=120)
    check(rc == 0 and err == b"", "bridge exit %d: %r" % (rc, err))
    peer.wait()
    with open(dst, "rb") as f:
        out = f.read()
    check(sha(peer.received()) == sha(data), "peer received %d bytes, sha mismatch" % len(peer.received()))
    check(sha(out) == sha(data), "stdout has %d bytes, sha mismatch" % len(out))


@case("TLS to a self-signed server without YAO_IPC_CA (system store) -> exit 1, "
      "'certificate verify failed'")
def tls_untrusted_cert(t):
    c = t.certs()
    peer = tcp_peer(t, tls=c["good"])
    rc, out, err = t.run([], tls_env(peer), stdin=MCP_INITIALIZE)
    check(rc == 1 and out == b"", "rc=%d" % rc)
    one_line_error(err, "tls handshake with tls:localhost:%s: certificate verify failed" % peer.port)
    peer.wait()
    check(peer.received() == b"", "payload reached an unverified peer")


@case("TLS certificate for other.example while connecting to localhost -> exit 1, "
      "'hostname mismatch'")
def tls_wrong_name(t):
    c = t.certs()
    peer = tcp_peer(t, tls=c["other"])
    rc, out, err = t.run([], tls_env(peer, ca=c["other"][0]), stdin=MCP_INITIALIZE)
    check(rc == 1, "rc=%d" % rc)
    one_line_error(err, "certificate verify failed: hostname mismatch")
    peer.wait()


@case("YAO_IPC_INSECURE=1 accepts the untrusted, misnamed certificate")
def tls_insecure(t):
    c = t.certs()
    peer = tcp_peer(t, "--mode", "sink", tls=c["other"])
    rc, out, err = t.run([], tls_env(peer, YAO_IPC_INSECURE="1"), stdin=b"abc\n")
    peer.wait()
    check(rc == 0 and err == b"" and out == b'{"received":4}\n', "rc=%d out=%r err=%r" % (rc, out, err))


@case("TLS with a wrong token -> exit 3, one line with the peer's reason")
def tls_wrong_token(t):
    c = t.certs()
    peer = tcp_peer(t, tls=c["good"])
    rc, out, err = t.run([], tls_env(peer, ca=c["good"][0], token="nope"), stdin=MCP_INITIALIZE)
    peer.wait()
    check(rc == 3 and out == b"", "rc=%d" % rc)
    one_line_error(err, "tls:localhost:%s refused the token: invalid token" % peer.port)
    check(peer.received() == b"", "payload reached the peer")


@case("TLS peer closing TCP without close_notify: everything it sent is still written, then "
      "exit 1 'closed without a TLS close_notify' (possible truncation is not success)")
def tls_truncation(t):
    c = t.certs()
    peer = tcp_peer(t, "--mode", "sink", "--no-close-notify", tls=c["good"])
    rc, out, err = t.run([], tls_env(peer, ca=c["good"][0]), stdin=b"abc\n")
    peer.wait()
    check(rc == 1 and out == b'{"received":4}\n', "rc=%d out=%r" % (rc, out))
    one_line_error(err, "closed without a TLS close_notify")

# ---- grpc mode: MCP JSON-RPC on stdio <-> yao.Yao over HTTP/2 ------------------------------

class GrpcPeer:
    """One tests/bridge/grpcpeer process (grpc-go) and the calls it recorded."""

    def __init__(self, t, *extra, tls=None, listen="127.0.0.1:0"):
        if not t.args.grpcpeer:
            raise Skip("no --grpcpeer given")
        self.t = t
        d = t.mkdir("grpcpeer")
        self.ready, self.record = os.path.join(d, "ready"), os.path.join(d, "record")
        self.stderr_path = os.path.join(d, "stderr")
        cmd = [t.args.grpcpeer, "-listen", listen, "-ready", self.ready, "-record", self.record]
        if tls:
            cmd += ["-cert", tls[0], "-key", tls[1]]
        self.proc = subprocess.Popen(cmd + list(extra), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=open(self.stderr_path, "wb"))
        t.cleanups.append(self.kill)
        deadline = time.time() + 10
        while not os.path.exists(self.ready):
            if self.proc.poll() is not None or time.time() > deadline:
                with open(self.stderr_path) as f:
                    raise Fail("grpcpeer did not start: %s" % f.read())
            time.sleep(0.02)
        with open(self.ready) as f:
            self.port = f.read().strip()

    def calls(self):
        if not os.path.exists(self.record):
            return []
        with open(self.record, "rb") as f:
            return [json.loads(ln) for ln in f.read().splitlines()]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def grpc_env(peer, host="127.0.0.1", **extra):
    env = {"YAO_IPC_MODE": "grpc", "YAO_GRPC_ADDR": "%s:%s" % (host, peer.port), "YAO_TOKEN": "tok-1",
           "YAO_REFRESH_TOKEN": "ref-1", "YAO_SANDBOX_ID": "sbx-1"}
    env.update(extra)
    return env


def go_json(s):
    """A string as Go's encoding/json writes it (what grpcpeer's results contain)."""
    out = json.dumps(s, ensure_ascii=False, separators=(",", ":"))
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                 ("\u2029", "\\u2029")):
        out = out.replace(a, b)
    return out


def req(id_, method, params=None):
    m = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        m["params"] = params
    return (json.dumps(m, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def text_result(text):
    return '{"content":[{"text":%s,"type":"text"}],"isError":false}' % go_json(text)


def rpc_error(id_, code, message, grpc=None):
    data = ',"data":{"grpcStatus":%d,"grpcCode":"%s"}' % grpc if grpc else ""
    return ('{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s%s}}\n'
            % (json.dumps(id_), code, json.dumps(message, ensure_ascii=False), data)).encode("utf-8")


GRPC_INIT_REPLY = (b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":'
                   b'{"tools":{},"resources":{}},"serverInfo":{"name":"yao-bridge","version":"%s"}}}\n')
GRPC_TOOLS = (b'[{"description":"Echo the arguments \\u003cas text\\u003e \\u0026 more","inputSchema":'
              b'{"type":"object"},"name":"echo"},{"description":"N MiB of text","inputSchema":'
              b'{"properties":{"mb":{"type":"integer"}},"type":"object"},"name":"big"}]')
# UTF-8, an escaped quote, an escaped U+2028, a backslash, an astral character, a number
# no double holds, and whitespace the bridge compacts away.
GRPC_ARGS_IN = ('{ "text" : "h\u00e9llo \u2713 \\"q\\" \\u2028 back\\\\slash \U0001F600",\n'
                '  "n": 12345678901234567890 }')
GRPC_ARGS = '{"text":"h\u00e9llo \u2713 \\"q\\" \\u2028 back\\\\slash \U0001F600","n":12345678901234567890}'


def bridge_version(t):
    out = subprocess.run([t.args.bridge, "--version"], stdout=subprocess.PIPE, check=True).stdout
    return out.split()[1]


def big_text(n):
    parts, size, i = [], 0, 0
    while size < n:
        ln = "yao-bridge %07d\n" % i
        parts.append(ln)
        size += len(ln)
        i += 1
    return "".join(parts)[:n]


@case("grpc: an MCP session byte-checked both ways (initialize answered locally after "
      "Healthz, notification ignored, tools/list, tools/call with UTF-8 arguments, "
      "resources/list, resources/read, ping); the metadata and requests as the server saw them")
def grpc_mcp_session(t):
    peer = GrpcPeer(t)
    b = Bridge(t, [], grpc_env(peer))
    b.send(MCP_INITIALIZE)
    check(b.read_line() == GRPC_INIT_REPLY % bridge_version(t), "initialize: %r" % b.out)
    b.send(MCP_INITIALIZED)
    b.send(MCP_TOOLS_LIST)
    line = b.read_line()
    check(line == b'{"jsonrpc":"2.0","id":2,"result":{"tools":' + GRPC_TOOLS + b'}}\n', "tools/list: %r" % line)
    call = ('{"jsonrpc":"2.0","id":"call-3","method":"tools/call","params":{"name":"echo","arguments":%s}}\n'
            % GRPC_ARGS_IN.replace("\n", " ")).encode("utf-8")
    b.send(call)
    line = b.read_line()
    want = ('{"jsonrpc":"2.0","id":"call-3","result":%s}\n' % text_result(GRPC_ARGS)).encode("utf-8")
    check(line == want, "tools/call:\n got %r\nwant %r" % (line, want))
    b.send(req(4, "resources/list"))
    line = b.read_line()
    check(line == b'{"jsonrpc":"2.0","id":4,"result":{"resources":[{"mimeType":"text/plain","name":"readme",'
          b'"uri":"yao://docs/readme"}]}}\n', "resources/list: %r" % line)
    b.send(req(5, "resources/read", {"uri": "yao://docs/r\u00e9sum\u00e9"}))
    line = b.read_line()
    want = ('{"jsonrpc":"2.0","id":5,"result":{"contents":[{"mimeType":"text/plain","text":"contents of '
            'yao://docs/r\u00e9sum\u00e9 \u2713","uri":"yao://docs/r\u00e9sum\u00e9"}]}}\n').encode("utf-8")
    check(line == want, "resources/read: %r" % line)
    b.send(req(6, "ping"))
    check(b.read_line() == b'{"jsonrpc":"2.0","id":6,"result":{}}\n', "ping")
    rc = b.finish()
    check(rc == 0 and b.err == b"", "bridge exit %d: %r" % (rc, b.err))
    calls = peer.calls()
    check([c["method"] for c in calls] == ["/yao.Yao/Healthz", "/yao.Yao/MCPListTools", "/yao.Yao/MCPCallTool",
                                           "/yao.Yao/MCPListResources", "/yao.Yao/MCPReadResource"],
          "server saw %s" % [c["method"] for c in calls])
    for c in calls:
        md = c["metadata"]
        check(md.get("authorization") == ["Bearer tok-1"] and md.get("x-refresh-token") == ["ref-1"] and
              md.get("x-sandbox-id") == ["sbx-1"] and "x-grpc-upstream" not in md and
              md.get("content-type") == ["application/grpc"] and
              md.get("user-agent", [""])[0].startswith("yao-bridge/"), "metadata: %s" % md)
        check(110000 < c["deadline_ms"] <= 120000, "deadline %s ms, want the default 120 s" % c["deadline_ms"])
        check(c["method"].endswith("Healthz") or c["session_id"] == "sbx-1", "session_id: %s" % c)
    check(calls[2]["tool"] == "echo" and calls[2]["arguments"] == GRPC_ARGS,
          "arguments as received: %r" % calls[2].get("arguments"))
    check(calls[4]["uri"] == "yao://docs/r\u00e9sum\u00e9", "uri: %r" % calls[4]["uri"])
    check(len({c["peer"] for c in calls}) == 1, "more than one connection: %s" % {c["peer"] for c in calls})


@case("grpc: metadata and config through the relay: YAO_GRPC_TAI=enable sends YAO_GRPC_UPSTREAM "
      "as x-grpc-upstream, YAO_TOKEN_FILE is the bearer, YAO_GRPC_TIMEOUT is the grpc-timeout")
def grpc_metadata_relay(t):
    peer = GrpcPeer(t, "-token", "file-token.v2")
    tok = t.path("token")
    with open(tok, "w") as f:
        f.write("file-token.v2\n")
    env = grpc_env(peer, YAO_GRPC_TAI="enable", YAO_GRPC_UPSTREAM="yao-host:9099", YAO_GRPC_TIMEOUT="7",
                   YAO_TOKEN_FILE=tok)
    del env["YAO_TOKEN"]
    rc, out, err = t.run([], env, stdin=MCP_TOOLS_LIST)
    check(rc == 0 and err == b"" and out.startswith(b'{"jsonrpc":"2.0","id":2,"result":{"tools":['),
          "rc=%d out=%r err=%r" % (rc, out[:200], err))
    (c,) = peer.calls()
    md = c["metadata"]
    check(md.get("x-grpc-upstream") == ["yao-host:9099"] and md.get("authorization") == ["Bearer file-token.v2"],
          "metadata: %s" % md)
    check(5000 < c["deadline_ms"] <= 7000, "deadline %s ms, want 7 s" % c["deadline_ms"])
    # without YAO_GRPC_TAI=enable the upstream is not sent
    rc, out, err = t.run([], grpc_env(peer, YAO_GRPC_UPSTREAM="yao-host:9099", YAO_TOKEN="file-token.v2"),
                         stdin=MCP_TOOLS_LIST)
    check(rc == 0 and "x-grpc-upstream" not in peer.calls()[-1]["metadata"], "upstream sent without TAI")


@case("grpc: a 6 MiB tool result arrives whole, as one line, text intact")
def grpc_large_result(t):
    peer = GrpcPeer(t)
    rc, out, err = t.run([], grpc_env(peer), stdin=req(9, "tools/call", {"name": "big", "arguments": {"mb": 6}}),
                         timeout=60)
    check(rc == 0 and err == b"", "rc=%d err=%r" % (rc, err))
    check(out.count(b"\n") == 1 and out.endswith(b"\n"), "not one line: %d newlines" % out.count(b"\n"))
    msg = json.loads(out)
    text = msg["result"]["content"][0]["text"]
    check(msg["id"] == 9 and len(text) == 6 << 20 and text == big_text(6 << 20),
          "text of %d bytes, sha %s" % (len(text), sha(text.encode())))


@case("grpc: the server dies mid-call -> that call gets -32001 'connection ... lost'; the next "
      "one -32001 'Connection refused'; a new server on the port is reconnected to; exit 0 at EOF")
def grpc_server_dies(t):
    peer = GrpcPeer(t, "-die-on", "crash")
    b = Bridge(t, [], grpc_env(peer))
    b.send(MCP_TOOLS_LIST)
    check(b'"id":2,"result"' in b.read_line(), "tools/list before the crash")
    b.send(req(3, "tools/call", {"name": "crash", "arguments": {}}))
    line = b.read_line()
    want = rpc_error(3, -32001, "MCPCallTool: connection to tcp:127.0.0.1:%s lost: the server closed the "
                     "connection" % peer.port)
    alt = rpc_error(3, -32001, "MCPCallTool: connection to tcp:127.0.0.1:%s lost: read tcp:127.0.0.1:%s: "
                    "Connection reset by peer" % (peer.port, peer.port))
    check(line in (want, alt), "crash reply: %r" % line)
    peer.proc.wait(timeout=10)
    b.send(req(4, "tools/list"))
    line = b.read_line()
    check(line == rpc_error(4, -32001, "MCPListTools: connect tcp:127.0.0.1:%s: Connection refused" % peer.port),
          "after the crash: %r" % line)
    peer2 = GrpcPeer(t, listen="127.0.0.1:" + peer.port)
    b.send(req(5, "tools/list"))
    check(b'"id":5,"result":{"tools":[' in b.read_line(), "no reconnect")
    rc = b.finish()
    check(rc == 0 and b.err == b"", "bridge exit %d: %r" % (rc, b.err))
    check([c["status"] for c in peer.calls()] == ["OK", "died"] and len(peer2.calls()) == 1,
          "servers saw %s / %s" % (peer.calls(), peer2.calls()))


@case("grpc: a wrong token -> the server answers UNAUTHENTICATED -> -32000 naming it (Healthz, "
      "which Yao serves without a token, still lets initialize succeed)")
def grpc_wrong_token(t):
    peer = GrpcPeer(t)
    rc, out, err = t.run([], grpc_env(peer, YAO_TOKEN="wrong"), stdin=MCP_INITIALIZE + MCP_TOOLS_LIST)
    check(rc == 0 and err == b"", "rc=%d err=%r" % (rc, err))
    lines = sorted(lines_of(out))
    check(lines == sorted([GRPC_INIT_REPLY % bridge_version(t),
                           rpc_error(2, -32000, "MCPListTools: UNAUTHENTICATED: invalid token", (16, "UNAUTHENTICATED"))]),
          "got %r" % out)


def lines_of(out):
    return out.splitlines(keepends=True)


@case("grpc: token rotation: new tokens in a response's headers (x-access-token, "
      "x-refresh-token) are what every later call carries; the server accepts only the new one")
def grpc_token_rotation(t):
    peer = GrpcPeer(t, "-rotate-after", "2")
    b = Bridge(t, [], grpc_env(peer))
    for i in range(2, 6):
        b.send(req(i, "tools/list"))
        line = b.read_line()
        check(b'"id":%d,"result":{"tools":[' % i in line, "call %d: %r" % (i, line))
    rc = b.finish()
    check(rc == 0 and b.err == b"", "bridge exit %d: %r" % (rc, b.err))
    seen = [(c["metadata"]["authorization"][0], c["metadata"]["x-refresh-token"][0]) for c in peer.calls()]
    check(seen == [("Bearer tok-1", "ref-1")] * 2 + [("Bearer tok-1-r1", "ref-1-r1")] * 2, "tokens: %s" % seen)


@case("grpc: 100 tools/call in a row, each waiting for its reply, on one HTTP/2 connection; "
      "prints the time per call")
def grpc_100_calls(t):
    peer = GrpcPeer(t)
    b = Bridge(t, [], grpc_env(peer))
    b.send(MCP_TOOLS_LIST)  # connect outside the timing
    b.read_line()
    times = []
    for i in range(100):
        start = time.perf_counter()
        b.send(req(100 + i, "tools/call", {"name": "echo", "arguments": {"i": i}}))
        line = b.read_line()
        times.append(time.perf_counter() - start)
        want = ('{"jsonrpc":"2.0","id":%d,"result":%s}\n' % (100 + i, text_result('{"i":%d}' % i))).encode()
        check(line == want, "call %d: %r" % (i, line))
    rc = b.finish()
    check(rc == 0 and b.err == b"", "bridge exit %d: %r" % (rc, b.err))
    calls = peer.calls()
    check(len(calls) == 101 and len({c["peer"] for c in calls}) == 1, "%d calls on %d connections"
          % (len(calls), len({c["peer"] for c in calls})))
    times.sort()
    print("     per call: median %.3f ms, p90 %.3f ms, max %.3f ms (stdin line -> stdout line)"
          % (times[50] * 1e3, times[90] * 1e3, times[-1] * 1e3))


@case("grpc: TLS with YAO_GRPC_CA (ALPN h2, name checked); without the CA the call fails "
      "-32001 'certificate verify failed'; a plaintext bridge against TLS fails too")
def grpc_tls(t):
    c = t.certs()
    peer = GrpcPeer(t, tls=c["good"])
    env = grpc_env(peer, host="localhost", YAO_GRPC_TLS="1", YAO_GRPC_CA=c["good"][0])
    b = Bridge(t, [], env)
    b.send(MCP_INITIALIZE)
    check(b.read_line() == GRPC_INIT_REPLY % bridge_version(t), "initialize over TLS")
    b.send(req(3, "tools/call", {"name": "echo", "arguments": {"s": "\u00fc"}}))
    check(b.read_line() == ('{"jsonrpc":"2.0","id":3,"result":%s}\n' % text_result('{"s":"\u00fc"}')).encode(),
          "tools/call over TLS: %r" % b.out)
    rc = b.finish()
    check(rc == 0 and b.err == b"", "bridge exit %d: %r" % (rc, b.err))
    rc, out, err = t.run([], grpc_env(peer, host="localhost", YAO_GRPC_TLS="1"), stdin=MCP_TOOLS_LIST)
    check(rc == 0 and out.startswith(b'{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"MCPListTools: '
                                     b'tls handshake with tls:localhost:%s: certificate verify failed'
                                     % peer.port.encode()), "untrusted: %r" % out)
    rc, out, err = t.run([], grpc_env(peer, host="localhost"), stdin=MCP_TOOLS_LIST)
    check(rc == 0 and b'"code":-32001' in out and b"MCPListTools: connection to tcp:localhost:" in out,
          "plaintext to TLS: %r" % out)
    check(len(peer.calls()) == 2, "calls: %s" % peer.calls())


@case("grpc: per-call deadline: a call slower than YAO_GRPC_TIMEOUT ends with a -32002 "
      "'deadline exceeded' reply while a ping sent after it is answered first")
def grpc_deadline(t):
    peer = GrpcPeer(t)
    b = Bridge(t, [], grpc_env(peer, YAO_GRPC_TIMEOUT="1"))
    start = time.time()
    b.send(req(7, "tools/call", {"name": "sleep", "arguments": {"ms": 5000}}))
    b.send(req(8, "ping"))
    check(b.read_line() == b'{"jsonrpc":"2.0","id":8,"result":{}}\n', "ping not first")
    line = b.read_line()
    took = time.time() - start
    # whichever fires first: our timer, or the server's own deadline (it got grpc-timeout)
    ours = rpc_error(7, -32002, "MCPCallTool: no answer within 1000 ms (deadline exceeded)")
    servers = (b'{"jsonrpc":"2.0","id":7,"error":{"code":-32002,"message":"MCPCallTool: DEADLINE_EXCEEDED: '
               b'context deadline exceeded","data":{"grpcStatus":4,"grpcCode":"DEADLINE_EXCEEDED"}}}\n')
    check(line in (ours, servers) and took < 3 * t.slow, "after %.1fs: %r" % (took, line))
    rc = b.finish()
    check(rc == 0 and b.err == b"", "bridge exit %d: %r" % (rc, b.err))


@case("grpc: JSON-RPC errors answered locally: parse error, batch, unknown method, missing "
      "params, bad id, an RPC error status with its grpc-message; notifications get no reply")
def grpc_protocol_errors(t):
    peer = GrpcPeer(t)
    stdin = (b'{"jsonrpc":"2.0","id":1,"method":\n'
             b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n'
             + req(2, "prompts/list") + req(3, "tools/call", {"arguments": {}})
             + req(4, "resources/read", {}) + b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}\n'
             + b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}\n\n'
             + req(5, "tools/call", {"name": "fail", "arguments": {"code": 7, "message": "no \u00e9 100%"}}))
    rc, out, err = t.run([], grpc_env(peer), stdin=stdin)
    check(rc == 0 and err == b"", "rc=%d err=%r" % (rc, err))
    want = [rpc_error(None, -32700, "parse error: not valid JSON"),
            rpc_error(None, -32600, "invalid request: batches are not supported"),
            rpc_error(2, -32601, "method not found: prompts/list"),
            rpc_error(3, -32602, "invalid params: tools/call needs params.name (a string)"),
            rpc_error(4, -32602, "invalid params: resources/read needs params.uri (a string)"),
            rpc_error(None, -32600, "invalid request: id must be a string or a number"),
            rpc_error(5, -32000, "MCPCallTool: PERMISSION_DENIED: no \u00e9 100%", (7, "PERMISSION_DENIED"))]
    check(lines_of(out) == want, "got:\n%s" % out.decode("utf-8", "replace"))
    check([c["tool"] for c in peer.calls()] == ["fail"], "calls: %s" % peer.calls())


@case("grpc: configuration errors are one line and exit 2")
def grpc_config_errors(t):
    base = {"YAO_IPC_MODE": "grpc", "YAO_GRPC_ADDR": "127.0.0.1:1", "YAO_TOKEN": "t", "YAO_SANDBOX_ID": "s"}
    cases = [
        ({"YAO_GRPC_ADDR": None}, "needs YAO_GRPC_ADDR=host:port"),
        ({"YAO_GRPC_ADDR": "nohost"}, "bad address YAO_GRPC_ADDR=nohost"),
        ({"YAO_SANDBOX_ID": None}, "grpc mode needs YAO_SANDBOX_ID"),
        ({"YAO_TOKEN": None}, "grpc mode needs a token"),
        ({"YAO_TOKEN": "a\tb"}, "printable ASCII only"),
        ({"YAO_GRPC_TAI": "enable"}, "YAO_GRPC_TAI=enable needs YAO_GRPC_UPSTREAM"),
        ({"YAO_GRPC_TAI": "on"}, "YAO_GRPC_TAI=on: want enable or disable"),
        ({"YAO_GRPC_CA": "/etc/hostname"}, "need YAO_GRPC_TLS=1"),
        ({"YAO_GRPC_TLS": "1", "YAO_GRPC_CA": t.path("nope.pem")}, "YAO_GRPC_CA="),
        ({"YAO_GRPC_TIMEOUT": "0"}, "YAO_GRPC_TIMEOUT=0"),
        ({"YAO_IPC_TLS": "1"}, "not YAO_IPC_*"),
    ]
    for change, needle in cases:
        env = dict(base)
        for k, v in change.items():
            if v is None:
                env.pop(k)
            else:
                env[k] = v
        rc, out, err = t.run([], env, stdin=MCP_TOOLS_LIST)
        check(rc == 2 and out == b"", "%s: rc=%d out=%r" % (change, rc, out))
        one_line_error(err, needle)



def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bridge", required=True)
    ap.add_argument("--peer", required=True)
    ap.add_argument("--grpcpeer", default="", help="tests/bridge/grpcpeer binary (grpc cases skip without)")
    ap.add_argument("--only", default="")
    ap.add_argument("--valgrind", default="")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    if args.list:
        for name, desc, _ in CASES:
            print("%-26s %s" % (name, desc))
        return 0
    only = [n for n in args.only.split(",") if n]
    known = {n for n, _, _ in CASES}
    for n in only:
        if n not in known:
            print("unknown case %s" % n)
            return 2
    root = tempfile.mkdtemp(prefix="yao-bridge-tests.")
    passed = failed = skipped = 0
    print("yao-bridge tests: %s%s" % (args.bridge, " under valgrind" if args.valgrind else ""))
    for name, desc, fn in CASES:
        if only and name not in only:
            continue
        t = T(args, root, name)
        print("---- %s: %s" % (name, desc), flush=True)
        start = time.time()
        try:
            fn(t)
            passed += 1
            print("PASS %s (%.1fs)" % (name, time.time() - start), flush=True)
        except Skip as e:
            skipped += 1
            print("SKIP %s: %s" % (name, e), flush=True)
        except Exception as e:
            failed += 1
            detail = str(e) if isinstance(e, Fail) else traceback.format_exc()
            print("FAIL %s: %s" % (name, detail), flush=True)
        finally:
            for fn_cleanup in reversed(t.cleanups):
                try:
                    fn_cleanup()
                except Exception:
                    pass
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    if skipped:
        print("(%d skipped)" % skipped)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
