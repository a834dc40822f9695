/* bridge/bridge_pump.c — the copy loop: stdin -> connection -> stdout, both directions at
 * once in one poll() loop, 64 KiB buffered per direction, bytes never looked at.
 *
 * Rules it keeps (bridge/README.md has them for users):
 *   - stdin EOF: flush what is buffered, then half-close (shutdown(SHUT_WR) / TLS
 *     close_notify) and keep copying the peer's bytes to stdout;
 *   - the peer's EOF ends the run once every byte it sent has been written to stdout;
 *     exit 0 unless an error was recorded on the way;
 *   - a failed write to the peer (it went away) stops the upstream direction but still
 *     drains what the peer sent before failing the run;
 *   - stdout failing (EPIPE, or its reader gone while idle) ends the run at once.
 * Stdio may be blocking (a tty, a file) or non-blocking (main sets O_NONBLOCK on pipes
 * and sockets so a full stdout pipe cannot wedge the other direction); both work. */
#include "bridge.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

/* Bytes waiting in b. */
static size_t buf_len(const struct bridge_buf *b) {
    return b->end - b->start;
}

/* Free space at the tail of b, after compacting it when the tail is exhausted. Moving
 * bytes under a pending TLS write is allowed (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER). */
static size_t buf_room(struct bridge_buf *b) {
    if (b->start == b->end) {
        b->start = b->end = 0;
    } else if (b->end == BRIDGE_BUF_SIZE && b->start > 0) {
        memmove(b->data, b->data + b->start, buf_len(b));
        b->end -= b->start;
        b->start = 0;
    }
    return BRIDGE_BUF_SIZE - b->end;
}

/* Write as much of down to stdout as it takes now. 0 ok (maybe partial), -1 error. */
static int flush_stdout(int fd, struct bridge_buf *down, struct bridge_err *err) {
    while (buf_len(down) > 0) {
        ssize_t w = write(fd, down->data + down->start, buf_len(down));
        if (w > 0) { down->start += (size_t)w; continue; }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        bridge_err_set(err, BRIDGE_EXIT_IO, "write stdout: %s", w < 0 ? strerror(errno) : "no progress");
        return -1;
    }
    return 0;
}

/* Read what the peer has into down until it would block, down is full, or the stream
 * ends. Returns 1 when the stream ended (cleanly or with an error recorded), else 0.
 * *more is set when it stopped only because down is full: the connection may hold bytes
 * poll() cannot see (TLS decrypts a whole record, we may have taken part of it), so the
 * next round reads again as soon as there is room instead of waiting for POLLIN. */
static int fill_from_peer(struct bridge_conn *c, struct bridge_buf *down, int *more,
                          struct bridge_err *err) {
    *more = 0;
    for (;;) {
        size_t room = buf_room(down);
        ssize_t r;

        if (room == 0) { *more = 1; return 0; }
        r = bridge_conn_read(c, down->data + down->end, room, err);
        if (r > 0) { down->end += (size_t)r; continue; }
        if (r == BRIDGE_IO_AGAIN) return 0;
        if (r == 0) bridge_conn_close_notify(c);
        return 1;
    }
}

/* Send up to the peer; on stdin EOF and an empty buffer, half-close. Returns 1 when the
 * upstream direction is finished for good (failed), else 0. */
static int drain_to_peer(struct bridge_conn *c, struct bridge_buf *up, int in_eof, int *shut,
                         struct bridge_err *err) {
    struct bridge_err werr = { 0, "" };

    while (buf_len(up) > 0) {
        ssize_t w = bridge_conn_write(c, up->data + up->start, buf_len(up), &werr);
        if (w > 0) { up->start += (size_t)w; continue; }
        if (w == BRIDGE_IO_AGAIN) return 0;
        bridge_err_set(err, werr.code, "%s (%zu bytes from stdin not delivered)", werr.msg, buf_len(up));
        up->start = up->end = 0;
        return 1;
    }
    if (in_eof && !*shut) {
        int r = bridge_conn_shutdown_write(c, err);
        if (r == 1) *shut = 1;
        if (r < 0) return 1;
    }
    return 0;
}

/* The loop. See the top of the file for the rules. */
int bridge_pump_run(struct bridge_conn *c, int in_fd, int out_fd,
                    struct bridge_buf *up, struct bridge_buf *down, struct bridge_err *err) {
    int in_eof = 0, up_dead = 0, up_shut = 0, down_eof = 0, peer_more = 0;

    for (;;) {
        struct pollfd p[3];
        int want_in = !in_eof && !up_dead && buf_room(up) > 0;
        int want_sw = !up_dead && (buf_len(up) > 0 || (in_eof && !up_shut));
        int want_sr = !down_eof && buf_room(down) > 0;
        int want_out = buf_len(down) > 0;
        int pending = want_sr && peer_more;
        int got_in = 0;
        short sev = (short)((want_sr ? c->rd_want : 0) | (want_sw ? c->wr_want : 0));

        if (down_eof && !want_out) break;

        p[0].fd = want_in ? in_fd : -1;
        p[0].events = POLLIN;
        p[1].fd = sev ? c->fd : -1;
        p[1].events = sev;
        /* stdout is always watched: with no events asked, POLLERR/POLLHUP still tell us
         * its reader went away while we had nothing to write. */
        p[2].fd = out_fd;
        p[2].events = want_out ? POLLOUT : 0;
        p[0].revents = p[1].revents = p[2].revents = 0;
        if (poll(p, 3, pending ? 0 : -1) < 0) {
            if (errno == EINTR) continue;
            bridge_err_set(err, BRIDGE_EXIT_IO, "poll: %s", strerror(errno));
            break;
        }

        /* stdout first: it frees room for the peer's bytes. */
        if (p[2].revents & POLLNVAL) {
            bridge_err_set(err, BRIDGE_EXIT_IO, "write stdout: %s", strerror(EBADF));
            break;
        }
        if (want_out && (p[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
            if (flush_stdout(out_fd, down, err) < 0) break;
        } else if (!want_out && (p[2].revents & (POLLERR | POLLHUP))) {
            bridge_err_set(err, BRIDGE_EXIT_IO, "write stdout: the reader closed it");
            break;
        }

        if (want_sr && (pending || (p[1].revents & (c->rd_want | POLLERR | POLLHUP))))
            down_eof = fill_from_peer(c, down, &peer_more, err);

        if (want_in && (p[0].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) {
            size_t room = buf_room(up);
            ssize_t r;

            do r = read(in_fd, up->data + up->end, room);
            while (r < 0 && errno == EINTR);
            if (r > 0) { up->end += (size_t)r; got_in = 1; }
            else if (r == 0) in_eof = got_in = 1;
            else if (errno != EAGAIN && errno != EWOULDBLOCK) {
                bridge_err_set(err, BRIDGE_EXIT_IO, "read stdin: %s", strerror(errno));
                break;
            }
        }

        /* Try the socket right after stdin gave us something: it is usually writable,
         * and a failed attempt only costs an EAGAIN. */
        want_sw = !up_dead && (buf_len(up) > 0 || (in_eof && !up_shut));
        if (want_sw && (got_in || (p[1].revents & (c->wr_want | POLLERR | POLLHUP))))
            up_dead = drain_to_peer(c, up, in_eof, &up_shut, err);
    }
    return err->code;
}
