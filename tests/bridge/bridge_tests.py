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
    """A running yao-bridge with pipes, for interactive exchanges. prefix: a command that
    execs the bridge's command line given as its arguments (unshare, a namespace script)."""

    def __init__(self, t, argv, env, prefix=(), **kw):
        self.t = t
        self.started = time.time()
        self.proc = subprocess.Popen(list(prefix) + t.bridge_cmd(argv), env=t.bridge_env(env),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
        t.cleanups.append(self.kill)
        self.buf = b""
        self.out = b""
        self.err_early = b""  # stderr read while the bridge runs (wait_stderr)

    def wait_stderr(self, needle, timeout=10):
        """Wait until stderr so far holds needle (bytes)."""
        deadline = time.time() + timeout * self.t.slow
        fd = self.proc.stderr.fileno()
        while needle not in self.err_early:
            left = deadline - time.time()
            if left <= 0:
                raise Fail("stderr lacks %r within %ss (have %r)" % (needle, timeout, self.err_early))
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise Fail("bridge stderr closed (have %r)" % self.err_early)
                self.err_early += chunk

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
        self.err = self.err_early + err
        self.t.check_valgrind()
        return self.proc.returncode

    def wait_exit(self, timeout=20):
        """Wait for the bridge to exit on its own (stdin left open); collect its output."""
        try:
            rest, err = self.proc.communicate(timeout=timeout * self.t.slow)
        except subprocess.TimeoutExpired:
            raise Fail("bridge did not exit by itself within %ss (have %r)" % (timeout, self.buf))
        self.proc.stdin = None
        self.out += self.buf + rest
        self.buf = b""
        self.err = self.err_early + err
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
        # Most cases talk to a plaintext peer on loopback, which the bridge sends a token to
        # without being allowed; they run with YAO_BRIDGE_ALLOW_INSECURE=1 anyway, so that
        # they do not depend on that rule. The cases of the rule pass
        # YAO_BRIDGE_ALLOW_INSECURE=None (removed).
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

    def run(self, argv=(), env=None, stdin=b"", timeout=30, stdin_file=None, stdout_file=None, prefix=()):
        """Run the bridge to completion; returns (rc, stdout, stderr)."""
        kw = {}
        if stdin_file:
            kw["stdin"] = open(stdin_file, "rb")
            stdin = None
        else:
            kw["stdin"] = subprocess.PIPE
        kw["stdout"] = open(stdout_file, "wb") if stdout_file else subprocess.PIPE
        p = subprocess.Popen(list(prefix) + self.bridge_cmd(argv), env=self.bridge_env(env),
                             stderr=subprocess.PIPE, **kw)
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


def machine_address():
    """A non-loopback, non-link-local IPv4 address of this machine (its own interface: a
    listener there is reachable without any network), or Skip."""
    try:
        out = subprocess.run(["ip", "-o", "-4", "addr", "show", "scope", "global"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        raise Skip("no `ip` to find this machine's address")
    for ln in out.splitlines():
        f = ln.split()
        if "inet" in f:
            a = f[f.index("inet") + 1].split("/")[0]
            if not a.startswith(("127.", "169.254.")):
                return a
    raise Skip("this machine has no non-loopback IPv4 address")


def refusal(addr, shown, tls_var):
    return ("refusing to send the token over plain TCP to %s (%s is neither loopback nor link-local, nor "
            "host.tai.internal as /etc/hosts pins it): set %s=1 (TLS), or YAO_BRIDGE_ALLOW_INSECURE=1"
            % (addr, shown, tls_var))


@case("plaintext token rule, refused side: to a non-loopback, non-link-local address of this "
      "machine tcp and grpc modes exit 2 with one line naming it, before connecting; "
      "YAO_BRIDGE_ALLOW_INSECURE=1 lets it through; a bad value of it is a usage error")
def token_plain_refused(t):
    ip = machine_address()
    peer = tcp_peer(t, "--mode", "sink", host=ip, token="s3cret")
    gpeer = GrpcPeer(t, listen=ip + ":0")
    for env, tls_var, port in (({"YAO_IPC_MODE": "tcp", "YAO_TOKEN": "s3cret"}, "YAO_IPC_TLS", peer.port),
                               (grpc_env(gpeer, host=ip), "YAO_GRPC_TLS", gpeer.port)):
        env["YAO_IPC_ADDR" if env["YAO_IPC_MODE"] == "tcp" else "YAO_GRPC_ADDR"] = "%s:%s" % (ip, port)
        for off in (None, "0"):
            env["YAO_BRIDGE_ALLOW_INSECURE"] = off
            rc, out, err = t.run([], env, stdin=MCP_TOOLS_LIST)
            check(rc == 2 and out == b"", "%s: rc=%d out=%r" % (env["YAO_IPC_MODE"], rc, out))
            one_line_error(err, refusal("%s:%s" % (ip, port), ip, tls_var))
        env["YAO_BRIDGE_ALLOW_INSECURE"] = "perhaps"
        rc, out, err = t.run([], env, stdin=MCP_TOOLS_LIST)
        check(rc == 2, "rc=%d" % rc)
        one_line_error(err, "YAO_BRIDGE_ALLOW_INSECURE=perhaps: want 1 or 0")
    got = peer.received() if os.path.exists(peer.record) else b""
    check(got == b"" and gpeer.all_calls() == [], "a refused bridge reached the peer: %r %s" % (got, gpeer.all_calls()))
    # the operator's opt-in
    rc, out, err = t.run([], dict(grpc_env(gpeer, host=ip), YAO_BRIDGE_ALLOW_INSECURE="1"), stdin=MCP_TOOLS_LIST)
    check(rc == 0 and b'"id":2,"result":{"tools":[' in out and err == b"", "opted in: rc=%d %r %r" % (rc, out, err))
    rc, out, err = t.run([], {"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "%s:%s" % (ip, peer.port), "YAO_TOKEN": "s3cret",
                              "YAO_BRIDGE_ALLOW_INSECURE": "1"}, stdin=b"abc\n")
    peer.wait()
    check(rc == 0 and out == b'{"received":4}\n', "tcp opted in: rc=%d out=%r err=%r" % (rc, out, err))


@case("plaintext token rule, allowed side: loopback by address (127.0.0.1, ::1) and by a name "
      "that resolves to it (localhost) needs no permission; TLS needs none either")
def token_plain_loopback(t):
    gpeer = GrpcPeer(t)
    for host in ("127.0.0.1", "localhost"):
        rc, out, err = t.run([], dict(grpc_env(gpeer, host=host), YAO_BRIDGE_ALLOW_INSECURE=None),
                             stdin=MCP_TOOLS_LIST)
        check(rc == 0 and b'"id":2,"result":{"tools":[' in out and err == b"",
              "grpc to %s: rc=%d out=%r err=%r" % (host, rc, out[:120], err))
    peer = tcp_peer(t, "--mode", "sink", token="s3cret")
    rc, out, err = t.run([], {"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "localhost:" + peer.port, "YAO_TOKEN": "s3cret",
                              "YAO_BRIDGE_ALLOW_INSECURE": None}, stdin=b"abc\n")
    peer.wait()
    check(rc == 0 and out == b'{"received":4}\n', "tcp to localhost: rc=%d out=%r err=%r" % (rc, out, err))
    if socket.has_ipv6:
        try:
            p6 = tcp_peer(t, "--mode", "sink", host="::1", token="s3cret")
        except Fail:
            p6 = None  # no IPv6 loopback here
        if p6:
            rc, out, err = t.run([], {"YAO_IPC_MODE": "tcp", "YAO_IPC_ADDR": "[::1]:" + p6.port, "YAO_TOKEN": "s3cret",
                                      "YAO_BRIDGE_ALLOW_INSECURE": None}, stdin=b"abc\n")
            p6.wait()
            check(rc == 0 and out == b'{"received":4}\n', "tcp to [::1]: rc=%d out=%r err=%r" % (rc, out, err))
    c = t.certs()
    tpeer = tcp_peer(t, "--mode", "sink", tls=c["good"])
    rc, out, err = t.run([], dict(tls_env(tpeer, "127.0.0.1", ca=c["good"][0]), YAO_BRIDGE_ALLOW_INSECURE=None),
                         stdin=b"abc\n")
    tpeer.wait()
    check(rc == 0 and out == b'{"received":4}\n', "TLS without the permission: rc=%d out=%r err=%r" % (rc, out, err))


class FakeDNS:
    """A DNS server on port 53 (UDP) of a loopback address of its own (127.0.53.N, so two
    runs at once do not meet), answering A queries for the names in answers, in a thread of
    the test; NXDOMAIN for anything else, no records for other types. What a spoofed answer,
    or a cluster DNS search-domain hit, looks like to the resolver."""

    def __init__(self, t, answers):
        import threading
        self.answers = {k.lower(): v for k, v in answers.items()}
        self.queries = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for n in range(os.getpid() % 200 + 20, 255):
            self.addr = "127.0.53.%d" % n
            try:
                self.sock.bind((self.addr, 53))
                break
            except OSError as e:
                why = e
        else:
            self.sock.close()
            raise Skip("cannot serve DNS on port 53 of 127.0.53.*: %s" % why)
        self.sock.settimeout(0.2)
        self.stop = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()
        t.cleanups.append(self.close)

    def serve(self):
        while not self.stop:
            try:
                q, addr = self.sock.recvfrom(1500)
            except socket.timeout:
                continue
            except OSError:
                return
            if len(q) < 12:
                continue
            i, labels = 12, []
            while i < len(q) and q[i]:
                labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace"))
                i += 1 + q[i]
            qtype = int.from_bytes(q[i + 1:i + 3], "big")
            name = ".".join(labels).lower()
            self.queries.append((name, qtype))
            question = q[12:i + 5]
            ip = self.answers.get(name)
            if ip is None:
                head = q[:2] + b"\x81\x83" + b"\x00\x01\x00\x00\x00\x00\x00\x00"  # NXDOMAIN
                self.sock.sendto(head + question, addr)
            elif qtype == 1:
                head = q[:2] + b"\x81\x80" + b"\x00\x01\x00\x01\x00\x00\x00\x00"
                rr = b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x05\x00\x04" + socket.inet_aton(ip)
                self.sock.sendto(head + question + rr, addr)
            else:
                head = q[:2] + b"\x81\x80" + b"\x00\x01\x00\x00\x00\x00\x00\x00"  # no AAAA
                self.sock.sendto(head + question, addr)

    def close(self):
        self.stop = True
        self.thread.join(2)
        self.sock.close()


def name_ns(t, hosts, resolv=None):
    """A prefix that runs the bridge in a private mount namespace whose /etc/hosts (and
    /etc/resolv.conf) are the given texts: the container's view as Tai or the kubelet writes
    it (a bind mount over the file, as the kubelet does), without touching this machine's
    files — shared by other work — and without a test-only knob in the bridge: it reads the
    real /etc/hosts path and resolves through the real glibc resolver. Needs root and
    util-linux unshare."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        raise Skip("needs root and unshare for a private /etc/hosts")
    hp = t.path("hosts.%d" % len(t.cleanups))
    with open(hp, "w") as f:
        f.write(hosts)
    rp = ""
    if resolv is not None:
        rp = t.path("resolv.%d" % len(t.cleanups))
        with open(rp, "w") as f:
            f.write(resolv)
    script = ('mount --bind "$1" /etc/hosts || exit 97; if [ -n "$2" ]; then mount --bind "$2" /etc/resolv.conf '
              '|| exit 97; fi; shift 2; exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", hp, rp]


@case("plaintext token rule, host.tai.internal: as the container's /etc/hosts pins it (Tai's "
      "ExtraHosts, a pod's hostAliases) it needs no permission, at loopback and at the pinned "
      "non-loopback address alike, and /etc/hosts is read without DNS; the same name answered "
      "by DNS is judged by the address: a spoofed or search-domain answer elsewhere is refused, "
      "one on loopback is fine")
def token_tai_host(t):
    ip = machine_address()
    # one server on this machine's address and one on loopback, on the same port
    peer_ip = GrpcPeer(t, listen=ip + ":0")
    try:
        peer_lo = GrpcPeer(t, listen="127.0.0.1:" + peer_ip.port)
    except Fail:
        raise Skip("port %s is taken on 127.0.0.1" % peer_ip.port)
    peers = {ip: peer_ip, "127.0.0.1": peer_lo}
    env = dict(grpc_env(peer_ip, host="host.tai.internal"), YAO_BRIDGE_ALLOW_INSECURE=None)
    addr = "host.tai.internal:" + peer_ip.port
    # pinned at loopback, as Yao's own test setup maps it, and at this machine's address
    # (as Docker's host-gateway would be); DNS says otherwise and must not be asked
    dns = FakeDNS(t, {"host.tai.internal": ip})
    resolv = "nameserver %s\n" % dns.addr
    for pinned in ("127.0.0.1", ip):
        hosts = "127.0.0.1\tlocalhost\n# HostAliases\n%s\thost.tai.internal\n" % pinned
        before = len(dns.queries)
        rc, out, err = t.run([], env, stdin=MCP_TOOLS_LIST, prefix=name_ns(t, hosts, resolv))
        check(rc == 0 and b'"id":2,"result":{"tools":[' in out and err == b"",
              "pinned at %s: rc=%d out=%r err=%r" % (pinned, rc, out[:120], err))
        check(len(peers[pinned].calls()) == 1, "pinned at %s: that server saw %d calls" % (pinned,
                                                                                      len(peers[pinned].calls())))
        c = peers[pinned].calls()[-1]
        check(c["peer"].rsplit(":", 1)[0] in (pinned, "::ffff:" + pinned) and c["metadata"][":authority"] == [addr],
              "pinned at %s: the server saw %s, authority %s" % (pinned, c["peer"], c["metadata"][":authority"]))
        check(len(dns.queries) == before, "pinned name was looked up in DNS: %s" % dns.queries[before:])
    # not pinned: DNS answers with an address of this machine that is not loopback -> refused
    rc, out, err = t.run([], env, stdin=MCP_TOOLS_LIST, prefix=name_ns(t, "127.0.0.1\tlocalhost\n", resolv))
    check(rc == 2 and out == b"", "DNS answer %s: rc=%d out=%r" % (ip, rc, out))
    one_line_error(err, refusal(addr, ip, "YAO_GRPC_TLS"))
    check(("host.tai.internal", 1) in dns.queries, "DNS was not asked: %s" % dns.queries)
    # the Kubernetes shape of the same attack: ndots:5 makes the resolver try the search
    # domains first, and a pod named host in a headless service tai of a namespace internal
    # is host.tai.internal.svc.cluster.local
    dns.answers = {"host.tai.internal.svc.cluster.local": ip}
    rc, out, err = t.run([], env, stdin=MCP_TOOLS_LIST, prefix=name_ns(
        t, "127.0.0.1\tlocalhost\n", resolv + "search svc.cluster.local\noptions ndots:5\n"))
    check(rc == 2 and out == b"", "search-domain answer: rc=%d out=%r" % (rc, out))
    one_line_error(err, refusal(addr, ip, "YAO_GRPC_TLS"))
    check(("host.tai.internal.svc.cluster.local", 1) in dns.queries, "search domain not asked: %s" % dns.queries)
    check(len(peer_ip.calls()) == 1, "a refused bridge reached the server: %s" % peer_ip.calls())
    # DNS that answers loopback is as good as loopback
    dns.answers = {"host.tai.internal": "127.0.0.1"}
    rc, out, err = t.run([], env, stdin=MCP_TOOLS_LIST, prefix=name_ns(t, "127.0.0.1\tlocalhost\n", resolv))
    check(rc == 0 and b'"id":2,"result":{"tools":[' in out and err == b"" and len(peer_lo.calls()) == 2,
          "DNS answer 127.0.0.1: rc=%d out=%r err=%r" % (rc, out[:120], err))


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

    def all_calls(self):
        if not os.path.exists(self.record):
            return []
        with open(self.record, "rb") as f:
            return [json.loads(ln) for ln in f.read().splitlines()]

    def calls(self):
        """The MCP-side calls (heartbeats have their own list)."""
        return [c for c in self.all_calls() if c["method"] != "/yao.Yao/Heartbeat"]

    def heartbeats(self):
        return [c for c in self.all_calls() if c["method"] == "/yao.Yao/Heartbeat"]

    def wait_heartbeats(self, n, timeout):
        """Wait until n heartbeats are recorded; returns them."""
        deadline = time.time() + timeout * self.t.slow
        while len(self.heartbeats()) < n:
            if time.time() > deadline:
                raise Fail("%d heartbeats within %ss, want %d" % (len(self.heartbeats()), timeout, n))
            time.sleep(0.05)
        return self.heartbeats()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def grpc_env(peer, host="127.0.0.1", **extra):
    # Heartbeats are the grpc_heartbeat_* cases' business: elsewhere they are an hour apart,
    # so no case's record or stderr depends on whether one happened to fall into it.
    env = {"YAO_IPC_MODE": "grpc", "YAO_GRPC_ADDR": "%s:%s" % (host, peer.port), "YAO_TOKEN": "tok-1",
           "YAO_REFRESH_TOKEN": "ref-1", "YAO_SANDBOX_ID": "sbx-1", "YAO_HEARTBEAT_INTERVAL": "1h"}
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


def gaps_ms(beats):
    return [b2["at_ms"] - b1["at_ms"] for b1, b2 in zip(beats, beats[1:])]


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


@case("grpc: Heartbeat every YAO_HEARTBEAT_INTERVAL (300ms) beside MCP calls, on their "
      "connection, with their token and metadata: sandbox_id from YAO_SANDBOX_ID, plausible "
      "CPU/memory/process figures; the first one interval after the start")
def grpc_heartbeat_fields(t):
    peer = GrpcPeer(t)
    b = Bridge(t, [], grpc_env(peer, YAO_HEARTBEAT_INTERVAL="300ms", YAO_SANDBOX_ID="sbx-1"))
    start_ms = int(b.started * 1000)
    b.send(MCP_INITIALIZE)
    check(b.read_line() == GRPC_INIT_REPLY % bridge_version(t), "initialize: %r" % b.out)
    for i in range(6):
        b.send(req(10 + i, "tools/call", {"name": "echo", "arguments": {"i": i}}))
        check(b'"id":%d,"result"' % (10 + i) in b.read_line(), "call %d" % i)
        time.sleep(0.25)
    beats = peer.wait_heartbeats(5, 10)
    rc = b.finish()
    check(rc == 0 and b.err == b"", "bridge exit %d: %r" % (rc, b.err))
    calls = peer.calls()
    check(len(calls) == 7 and all(c["status"] == "OK" for c in calls), "MCP calls: %s" % calls)
    for hb in beats:
        md = hb["metadata"]
        check(hb["status"] == "OK" and hb["action"] == "ok" and hb.get("sandbox_id") == "sbx-1",
              "heartbeat: %s" % {k: hb.get(k) for k in ("status", "action", "sandbox_id")})
        check(md.get("authorization") == ["Bearer tok-1"] and md.get("x-sandbox-id") == ["sbx-1"] and
              md.get("user-agent", [""])[0].startswith("yao-bridge/"), "metadata: %s" % md)
        check(0 <= hb.get("cpu_percent", 0) <= 100, "cpu_percent %s" % hb.get("cpu_percent"))
        check(hb.get("running_procs", 0) >= 1, "running_procs %s" % hb.get("running_procs"))
        check(hb["peer"] == calls[0]["peer"], "heartbeat on another connection: %s vs %s" % (hb["peer"], calls[0]["peer"]))
        check(300 < hb["deadline_ms"] <= 1000, "heartbeat deadline %s ms, want at most 1 s" % hb["deadline_ms"])
    # memory: this process tree's cgroup, which holds at least the bridge itself
    check(all(hb.get("mem_bytes", 0) > 1 << 20 for hb in beats) or not os.path.exists("/sys/fs/cgroup"),
          "mem_bytes %s" % [hb.get("mem_bytes") for hb in beats])
    first = beats[0]["at_ms"] - start_ms
    check(250 <= first <= 300 + 400 * t.slow, "first heartbeat %d ms after the start, want ~300" % first)
    g = gaps_ms(beats)
    check(250 <= median(g) <= 400 and min(g) >= 150, "gaps between heartbeats %s ms, want ~300" % g)
    print("     %d heartbeats, gaps %s ms, first after %d ms; cpu %s%%, mem %s, procs %s"
          % (len(beats), g, first, [hb.get("cpu_percent", 0) for hb in beats],
             beats[-1].get("mem_bytes"), beats[-1].get("running_procs")))


@case("grpc: without YAO_HEARTBEAT_INTERVAL heartbeats are Yao's 10 s apart, the first at 10 s")
def grpc_heartbeat_default_interval(t):
    peer = GrpcPeer(t)
    env = grpc_env(peer)
    del env["YAO_HEARTBEAT_INTERVAL"]
    b = Bridge(t, [], env)
    start_ms = int(b.started * 1000)
    time.sleep(9)
    check(peer.heartbeats() == [], "a heartbeat before 9 s: %s" % peer.heartbeats())
    (hb,) = peer.wait_heartbeats(1, 4)
    rc = b.finish()
    check(rc == 0 and b.err == b"", "bridge exit %d: %r" % (rc, b.err))
    first = hb["at_ms"] - start_ms
    check(9800 <= first <= 11500, "first heartbeat after %d ms, want 10000" % first)
    check(8000 < hb["deadline_ms"] <= 10000, "deadline %s ms, want the interval" % hb["deadline_ms"])


@case("grpc: a heartbeat answered \"shutdown\" ends serving cleanly: one stderr line, stdin "
      "no longer read, the 64 calls in flight answered, a request read but not yet sent (the "
      "65th) answered -32003, no heartbeat after it, exit 0")
def grpc_heartbeat_shutdown(t):
    stop = t.path("stop")
    peer = GrpcPeer(t, "-shutdown-file", stop)
    b = Bridge(t, [], grpc_env(peer, YAO_HEARTBEAT_INTERVAL="200ms"))
    b.send(MCP_TOOLS_LIST)
    check(b'"id":2,"result":{"tools":[' in b.read_line(), "tools/list")
    peer.wait_heartbeats(2, 5)
    # 64 calls in flight (the most the bridge runs at once), the 65th waits in its buffer
    b.send(b"".join(req(100 + i, "tools/call", {"name": "sleep", "arguments": {"ms": int(2000 * t.slow)}})
                    for i in range(64)) + req(164, "tools/list"))
    time.sleep(0.5 * t.slow)  # the calls are at the server (which records calls as they end)
    with open(stop, "w"):
        pass
    deadline = time.time() + 5 * t.slow
    while not any(hb["action"] == "shutdown" for hb in peer.heartbeats()):
        check(time.time() < deadline, "no heartbeat answered shutdown: %s" % peer.heartbeats())
        time.sleep(0.02)
    time.sleep(0.3 * t.slow)  # the bridge has the answer too
    b.send(req(8, "tools/list"))  # after the shutdown: never read, never answered
    rc = b.wait_exit(15)
    check(rc == 0, "exit %d: %r" % (rc, b.err))
    one_line_error(b.err, 'Yao answered the heartbeat with "shutdown": reading no more requests, finishing '
                   'the 64 call(s) in flight, then exiting')
    got = sorted(lines_of(b.out)[1:])
    slept = sorted(('{"jsonrpc":"2.0","id":%d,"result":%s}\n' % (100 + i, text_result("slept"))).encode()
                   for i in range(64))
    refused = rpc_error(164, -32003, 'not sent: Yao asked this sandbox to shut down (its Heartbeat answered '
                        '"shutdown")')
    check(got == sorted(slept + [refused]), "stdout after tools/list (%d lines): %r" % (len(got), got[-3:]))
    beats = peer.heartbeats()
    check([hb["action"] for hb in beats][-1] == "shutdown" and
          [hb["action"] for hb in beats].count("shutdown") == 1, "heartbeats: %s" % [hb["action"] for hb in beats])
    check([c.get("tool") for c in peer.calls()] == [None] + ["sleep"] * 64, "calls: %s"
          % [c.get("tool") for c in peer.calls()])


@case("grpc: a server without Heartbeat (UNIMPLEMENTED) is said once on stderr and retried "
      "every tick; MCP calls are served as before")
def grpc_heartbeat_unimplemented(t):
    peer = GrpcPeer(t, "-heartbeat", "unimplemented")
    b = Bridge(t, [], grpc_env(peer, YAO_HEARTBEAT_INTERVAL="200ms"))
    b.send(MCP_INITIALIZE)
    check(b.read_line() == GRPC_INIT_REPLY % bridge_version(t), "initialize: %r" % b.out)
    for i in range(5):
        b.send(req(20 + i, "tools/call", {"name": "echo", "arguments": {"i": i}}))
        want = ('{"jsonrpc":"2.0","id":%d,"result":%s}\n' % (20 + i, text_result('{"i":%d}' % i))).encode()
        line = b.read_line()
        check(line == want, "call %d: %r" % (i, line))
        time.sleep(0.2)
    beats = peer.wait_heartbeats(4, 5)
    rc = b.finish()
    check(rc == 0, "bridge exit %d: %r" % (rc, b.err))
    check(all(hb["status"] == "Unimplemented" for hb in beats), "statuses %s" % [hb["status"] for hb in beats])
    one_line_error(b.err, "heartbeat to 127.0.0.1:%s failed: UNIMPLEMENTED: method Heartbeat not implemented "
                   "(MCP serving goes on; trying again every 200ms" % peer.port)


@case("grpc: heartbeats while the server is down fail (said once), MCP calls get -32001; a "
      "server on the port again: heartbeats work again (said once) and calls succeed")
def grpc_heartbeat_server_down(t):
    peer = GrpcPeer(t)
    port = peer.port
    peer.kill()
    b = Bridge(t, [], grpc_env(peer, YAO_HEARTBEAT_INTERVAL="200ms"))
    b.wait_stderr(b"heartbeat to 127.0.0.1:%s failed" % port.encode())
    time.sleep(0.6)  # more heartbeats fail meanwhile, unsaid
    b.send(MCP_TOOLS_LIST)
    check(b.read_line() == rpc_error(2, -32001, "MCPListTools: connect tcp:127.0.0.1:%s: Connection refused" % port),
          "while down: %r" % b.out)
    peer2 = GrpcPeer(t, listen="127.0.0.1:" + port)
    peer2.wait_heartbeats(2, 5)
    b.send(req(3, "tools/list"))
    check(b'"id":3,"result":{"tools":[' in b.read_line(), "after the restart: %r" % b.out)
    rc = b.finish()
    check(rc == 0, "bridge exit %d: %r" % (rc, b.err))
    err = b.err.decode()
    want = ["yao-bridge: heartbeat to 127.0.0.1:%s failed: connect tcp:127.0.0.1:%s: Connection refused (MCP "
            "serving goes on; trying again every 200ms, said again only if it fails differently)" % (port, port),
            "yao-bridge: heartbeat to 127.0.0.1:%s works again" % port]
    check(err.splitlines() == want, "stderr:\n%s" % err)


def blackhole(t):
    """A loopback port whose SYNs go unanswered: a listener that never accepts, its accept
    queue filled (Linux then drops new SYNs), as a server behind a dropping firewall looks."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(0)
    port = ls.getsockname()[1]
    held = [ls]
    t.cleanups.append(lambda: [x.close() for x in held])
    for _ in range(3):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        held.append(s)
    time.sleep(0.2)
    probe = socket.socket()
    probe.settimeout(0.5)
    try:
        probe.connect(("127.0.0.1", port))
        raise Skip("this kernel completes connections to a full accept queue")
    except (socket.timeout, TimeoutError):
        pass
    finally:
        probe.close()
    return str(port)


@case("grpc: a server that never answers the connect (SYNs dropped) costs no MCP latency: "
      "heartbeats and calls wait for the connection without blocking stdio (pings answered "
      "at once), a call ends -32002 at its deadline, the heartbeat failure is said once")
def grpc_heartbeat_blackhole(t):
    port = blackhole(t)
    env = {"YAO_IPC_MODE": "grpc", "YAO_GRPC_ADDR": "127.0.0.1:" + port, "YAO_TOKEN": "tok-1",
           "YAO_SANDBOX_ID": "sbx-1", "YAO_HEARTBEAT_INTERVAL": "300ms", "YAO_GRPC_TIMEOUT": "2"}
    b = Bridge(t, [], env)
    b.send(MCP_TOOLS_LIST)
    start = time.time()
    b.send(req(99, "ping"))  # the bridge has started (a sanitized build takes a while)
    check(b.read_line() == b'{"jsonrpc":"2.0","id":99,"result":{}}\n', "first ping: %r" % b.out)
    worst, line, took = 0, None, None
    for i in range(15):
        t0 = time.time()
        b.send(req(100 + i, "ping"))
        while True:  # replies come as calls end: the tools/list one may come in between
            got = b.read_line()
            if got.startswith(b'{"jsonrpc":"2.0","id":2,'):
                line, took = got, time.time() - start
                continue
            check(got == b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % (100 + i), "ping %d: %r" % (i, got))
            break
        worst = max(worst, time.time() - t0)
        time.sleep(0.1)
    if line is None:
        line = b.read_line(10)
        took = time.time() - start
    check(line == rpc_error(2, -32002, "MCPListTools: no connection to tcp:127.0.0.1:%s within 2000 ms (deadline "
                            "exceeded)" % port), "tools/list: %r" % line)
    check(1.5 <= took <= 2.5 * t.slow + 1, "tools/list ended after %.1fs, want its 2 s deadline" % took)
    # a blocked loop would hold a ping for the heartbeat's whole 1 s connect deadline
    check(worst < 0.5 * t.slow, "worst ping latency %.3fs while the server is unreachable" % worst)
    t0 = time.time()
    rc = b.finish()
    check(rc == 0 and time.time() - t0 < 2 * t.slow, "exit %d after %.1fs" % (rc, time.time() - t0))
    one_line_error(b.err, "heartbeat to 127.0.0.1:%s failed: no connection to tcp:127.0.0.1:%s within 1000 ms "
                   "(deadline exceeded) (MCP serving goes on" % (port, port))
    print("     worst ping latency %.1f ms while every connect hangs" % (worst * 1e3))


class Cgroup:
    """A cgroup of this machine (v1: in the cpu, cpuacct and memory hierarchies; v2: one
    directory) with a CPU limit, for processes the test puts in it; removed at the end."""

    def __init__(self, t, quota_us, period_us=100000):
        if os.geteuid() != 0:
            raise Skip("needs root to make a cgroup")
        name = "yao-bridge-test-%d" % os.getpid()
        self.dirs = []
        t.cleanups.append(self.remove)
        try:
            if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
                d = "/sys/fs/cgroup/" + name
                with open("/sys/fs/cgroup/cgroup.subtree_control", "w") as f:
                    f.write("+cpu +memory")
                os.mkdir(d)
                self.dirs.append(d)
                with open(d + "/cpu.max", "w") as f:
                    f.write("%d %d" % (quota_us, period_us))
            else:
                mounts = []
                for ctl in ("cpu", "cpuacct", "memory"):
                    for m in ("/sys/fs/cgroup/" + ctl, "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuacct,cpu"):
                        if os.path.isdir(m) and ctl in os.path.basename(m).split(","):
                            if m not in mounts:
                                mounts.append(m)
                            break
                    else:
                        raise Skip("no cgroup v1 %s hierarchy" % ctl)
                for m in mounts:
                    os.mkdir(m + "/" + name)
                    self.dirs.append(m + "/" + name)
                cpu = [d for d in self.dirs if "cpu" in os.path.basename(os.path.dirname(d)).split(",")][0]
                with open(cpu + "/cpu.cfs_period_us", "w") as f:
                    f.write(str(period_us))
                with open(cpu + "/cpu.cfs_quota_us", "w") as f:
                    f.write(str(quota_us))
        except OSError as e:
            raise Skip("cannot make a cgroup here: %s" % e)

    def join(self):
        """For preexec_fn: move the calling (child) process into the cgroup."""
        for d in self.dirs:
            with open(d + "/cgroup.procs", "w") as f:
                f.write(str(os.getpid()))

    def remove(self):
        for d in reversed(self.dirs):
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.1)


@case("grpc: heartbeat figures are the sandbox's: in a cgroup limited to 0.05 CPU and a PID "
      "namespace holding the bridge and two sleeps, idle reads ~0% and 3 processes, a CPU "
      "burner and 64 MiB in the cgroup read ~100% and +64 MiB, back to ~0% when they end")
def grpc_heartbeat_cgroup(t):
    if not shutil.which("unshare"):
        raise Skip("no unshare")
    cg = Cgroup(t, 5000)
    peer = GrpcPeer(t)
    prefix = ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c",
              'sleep 600 & sleep 600 & exec "$@"', "sh"]
    b = Bridge(t, [], grpc_env(peer, YAO_HEARTBEAT_INTERVAL="500ms"), prefix=prefix, preexec_fn=cg.join)
    b.send(MCP_TOOLS_LIST)
    check(b'"id":2,"result":{"tools":[' in b.read_line(), "tools/list: %r" % b.out)

    def phase(n):
        have = len(peer.heartbeats())
        return peer.wait_heartbeats(have + n, 10)[have:]

    idle = phase(4)[1:]  # the first window holds the bridge's own start
    # the hog first, alone: at 0.05 CPU its start and its 64 MiB take a while
    hog = subprocess.Popen([sys.executable, "-c", "import sys, time; b = b'x' * (64 << 20); print('ready'); "
                            "sys.stdout.flush(); time.sleep(600)"], preexec_fn=cg.join, stdout=subprocess.PIPE)
    burn = None
    t.cleanups.append(lambda: [p.kill() or p.wait() for p in (burn, hog) if p])
    r, _, _ = select.select([hog.stdout], [], [], 30)
    check(r and hog.stdout.readline() == b"ready\n", "the memory hog did not start within 30 s")
    burn = subprocess.Popen(["sh", "-c", "while :; do :; done"], preexec_fn=cg.join)
    phase(1)  # a window that began before the burner
    busy = phase(4)[1:]
    burn.kill()
    hog.kill()
    burn.wait()
    hog.wait()
    after = phase(4)[1:]
    rc = b.finish()
    check(rc == 0 and b.err == b"", "bridge exit %d: %r" % (rc, b.err))
    cpu = lambda hs: [h.get("cpu_percent", 0) for h in hs]
    mem = lambda hs: [h.get("mem_bytes", 0) for h in hs]
    print("     idle cpu %s%% mem %s; busy cpu %s%% mem %s; after cpu %s%% mem %s"
          % (cpu(idle), mem(idle), cpu(busy), mem(busy), cpu(after), mem(after)))
    check(all(h.get("running_procs") == 3 for h in idle + after), "procs idle/after: %s"
          % [h.get("running_procs") for h in idle + after])
    check(max(cpu(idle)) <= 20 and max(cpu(after)) <= 20, "idle cpu %s / after %s" % (cpu(idle), cpu(after)))
    check(min(cpu(busy)) >= 70, "busy cpu %s, want ~100 (the limit)" % cpu(busy))
    check(min(mem(busy)) >= max(mem(idle)) + (60 << 20), "mem idle %s busy %s" % (mem(idle), mem(busy)))
    check(max(mem(after)) <= min(mem(busy)) - (50 << 20), "mem busy %s after %s" % (mem(busy), mem(after)))


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
        ({"YAO_HEARTBEAT_INTERVAL": "10"}, "YAO_HEARTBEAT_INTERVAL=10: want a duration such as 10s"),
        ({"YAO_HEARTBEAT_INTERVAL": "50ms"}, "from 100ms to 24h"),
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
