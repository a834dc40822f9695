#!/usr/bin/env python3
"""tests/integration/pty_run.py — run a command on a pseudo-terminal of a given size, as a
person at a terminal would, and print what it wrote (CR LF turned into LF).

    pty_run.py ROWS COLS [--resize-after SECONDS ROWS COLS] [--timeout SECONDS] -- CMD...

--resize-after changes the terminal's size once, SECONDS after the start: the kernel then
sends SIGWINCH to the command, like a terminal window being resized. Exits with the
command's exit status (124 on timeout)."""
import fcntl, os, pty, select, signal, struct, sys, termios, time


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def main(argv):
    if "--" not in argv:
        sys.exit(__doc__)
    opts, cmd = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    rows, cols = int(opts[0]), int(opts[1])
    resize, timeout = None, 60.0
    i = 2
    while i < len(opts):
        if opts[i] == "--resize-after":
            resize = (float(opts[i + 1]), int(opts[i + 2]), int(opts[i + 3]))
            i += 4
        elif opts[i] == "--timeout":
            timeout = float(opts[i + 1])
            i += 2
        else:
            sys.exit("unknown option " + opts[i])
    pid, master = pty.fork()
    if pid == 0:
        set_size(0, rows, cols)   # before the command starts: it reads the size at once
        os.execvp(cmd[0], cmd)
    start, out = time.time(), bytearray()
    while True:
        now = time.time()
        if resize and now - start >= resize[0]:
            set_size(master, resize[1], resize[2])
            resize = None
        if now - start > timeout:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            sys.stdout.write(out.decode("utf-8", "replace").replace("\r\n", "\n"))
            return 124
        r, _, _ = select.select([master], [], [], 0.05)
        if r:
            try:
                data = os.read(master, 65536)
            except OSError:
                data = b""
            if not data:
                break
            out += data
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(out.decode("utf-8", "replace").replace("\r\n", "\n"))
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
