/* cli/tar_read.c — the safe extractor `cp SANDBOX:PATH LOCAL` feeds what comes out of a
 * sandbox to (see tar.h). The archive is treated as hostile, and the safety does not rest
 * on name checks alone: every path is opened one component at a time below the
 * destination with O_NOFOLLOW, so no symlink — from the archive or already on disk — is
 * ever followed while writing. Names with "..", absolute names, and links whose targets
 * leave the destination are refused before that. Reads ustar, GNU 'L'/'K' long names and
 * pax path/linkpath/size records; refuses GNU sparse and device entries. The writer is
 * tar_write.c. */
#include "cli/tar.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/dynbuf.h"
#include "base/errfmt.h"
#include "cli/fdio.h"
#include "cli/paths.h"
#include "cli/tar_format.h"

#define TAR_LONGNAME_MAX (64u << 10) /* a GNU 'L'/'K' long name we accept */

enum { UT_HEADER, UT_DATA, UT_END };

struct ut_dir { char *rel; unsigned mode; };

struct cli_untar {
    int destfd;
    char *from, *to;
    cli_note_fn on_reject;
    void *ud;
    int state;
    unsigned char hdr[TAR_BLOCK];
    size_t hdr_fill;
    uint64_t remaining;      /* data bytes of the current entry still to come */
    uint64_t pad;            /* then padding bytes */
    int out_fd;              /* where data goes (-1: discarded or meta) */
    unsigned out_mode;
    char meta_type;          /* 'x' 'g' 'L' 'K' while a meta entry's data is collected */
    struct dynbuf meta;
    char *pax_path, *pax_link, *long_name, *long_link;
    int have_pax_size;
    uint64_t pax_size;
    int zero_blocks;
    struct ut_dir *dirs;
    size_t ndirs, capdirs;
    size_t rejected, entries;
    int failed;
    char err[512];
};

/* Record a fatal error (printf-style). Returns -1. */
__attribute__((format(printf, 2, 3)))
static int ut_fail(struct cli_untar *u, const char *fmt, ...) {
    va_list ap;
    if (u->failed) return -1;
    va_start(ap, fmt);
    errfmt_v(u->err, sizeof(u->err), fmt, ap);
    va_end(ap);
    u->failed = 1;
    return -1;
}

/* A name made printable on one line: control bytes become '?'. */
static void printable(const char *in, char *out, size_t outlen) {
    size_t o = 0;
    for (; *in && o + 1 < outlen; in++) out[o++] = (unsigned char)*in < 0x20 || *in == 0x7f ? '?' : *in;
    out[o] = '\0';
}

/* Report and count one rejected entry. */
static void ut_reject(struct cli_untar *u, const char *name, const char *why) {
    char shown[512], msg[700];
    printable(name, shown, sizeof(shown));
    snprintf(msg, sizeof(msg), "rejected entry \"%s\": %s", shown, why);
    u->rejected++;
    if (u->on_reject) u->on_reject(u->ud, msg);
}

/* Map a clean member name through from/to; malloc'd result, or NULL (*outside set when the
 * name is not below `from`). */
static char *ut_map(struct cli_untar *u, const char *clean, int *outside) {
    *outside = 0;
    if (!u->from) return strdup(clean);
    const char *rest;
    size_t fl = strlen(u->from);
    if (fl == 0) rest = clean;
    else if (!strcmp(clean, u->from)) rest = "";
    else if (!strncmp(clean, u->from, fl) && clean[fl] == '/') rest = clean + fl + 1;
    else { *outside = 1; return NULL; }
    if (!*u->to) return strdup(rest);
    if (!*rest) return strdup(u->to);
    return cli_path_append(u->to, rest);
}

/* Open the directory that holds rel's last component, one component at a time below the
 * destination, never following a symlink; missing directories are created when create is
 * set. Returns an O_PATH descriptor and sets *base to rel's last component (inside rel),
 * or -1 with errno (ELOOP/ENOTDIR: a symlink or non-directory is in the way). */
static int ut_open_parent(struct cli_untar *u, char *rel, int create, const char **base) {
    int fd = dup(u->destfd);
    if (fd < 0) return -1;
    char *p = rel;
    for (;;) {
        char *slash = strchr(p, '/');
        if (!slash) { *base = p; return fd; }
        *slash = '\0';
        int next = openat(fd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT && create) {
            if (mkdirat(fd, p, 0777) == 0 || errno == EEXIST)
                next = openat(fd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        int saved = errno;
        *slash = '/';
        close(fd);
        if (next < 0) { errno = saved; return -1; }
        fd = next;
        p = slash + 1;
    }
}

/* Remember a directory's mode for the end. */
static int ut_defer_dir(struct cli_untar *u, const char *rel, unsigned mode) {
    if (u->ndirs == u->capdirs) {
        size_t ncap = u->capdirs ? u->capdirs * 2 : 16;
        struct ut_dir *nd = realloc(u->dirs, ncap * sizeof(*nd));
        if (!nd) return ut_fail(u, ERR_OOM);
        u->dirs = nd;
        u->capdirs = ncap;
    }
    if (!(u->dirs[u->ndirs].rel = strdup(rel))) return ut_fail(u, ERR_OOM);
    u->dirs[u->ndirs++].mode = mode;
    return 0;
}

/* Why a parent walk failed, as a rejection (path problems) or a fatal error. */
static int ut_walk_failed(struct cli_untar *u, const char *name, const char *mapped) {
    if (errno == ELOOP || errno == ENOTDIR) {
        ut_reject(u, name, "its path goes through a symlink or a file");
        return 0;
    }
    return ut_fail(u, "%s: %s", mapped, strerror(errno));
}

/* Create one entry (everything but its data). 0 (done or rejected) or -1 fatal. */
static int ut_create(struct cli_untar *u, char type, const char *name, const char *link,
                     unsigned mode) {
    size_t nl = strlen(name) + 1;
    char *clean = malloc(nl), *mapped = NULL, *lclean = NULL, *lmapped = NULL;
    int rc = 0, outside = 0, pfd = -1, tfd = -1;
    const char *base = NULL, *tbase = NULL;
    if (!clean) return ut_fail(u, ERR_OOM);
    int cr = cli_path_clean_rel(name, clean, nl);
    if (cr == -1) { ut_reject(u, name, "absolute path"); goto out; }
    if (cr == -2) { ut_reject(u, name, "path contains \"..\""); goto out; }
    if (cr != 0) { rc = ut_fail(u, ERR_OOM); goto out; }
    mapped = ut_map(u, clean, &outside);
    if (outside) { ut_reject(u, name, "not part of the requested path"); goto out; }
    if (!mapped) { rc = ut_fail(u, ERR_OOM); goto out; }
    if (!*mapped) {
        if (type != '5') ut_reject(u, name, "names the destination itself");
        goto out;
    }
    mode &= 01777;
    switch (type) {
    case '0': case '\0': case '7': {
        if ((pfd = ut_open_parent(u, mapped, 1, &base)) < 0) { rc = ut_walk_failed(u, name, mapped); goto out; }
        for (int attempt = 0; attempt < 2; attempt++) {
            u->out_fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (u->out_fd >= 0 || errno != EEXIST || attempt) break;
            if (unlinkat(pfd, base, 0) < 0) {
                if (errno == EISDIR || errno == EPERM) { ut_reject(u, name, "a directory is in the way"); goto out; }
                break;
            }
        }
        if (u->out_fd < 0) { rc = ut_fail(u, "%s: %s", mapped, strerror(errno)); goto out; }
        u->out_mode = mode;
        u->entries++;
        break;
    }
    case '5': {
        if ((pfd = ut_open_parent(u, mapped, 1, &base)) < 0) { rc = ut_walk_failed(u, name, mapped); goto out; }
        if (mkdirat(pfd, base, 0700) < 0 && errno != EEXIST) { rc = ut_fail(u, "%s: %s", mapped, strerror(errno)); goto out; }
        int dfd = openat(pfd, base, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0) { ut_reject(u, name, "something other than a directory is in the way"); goto out; }
        close(dfd);
        rc = ut_defer_dir(u, mapped, mode);
        if (rc == 0) u->entries++;
        break;
    }
    case '2': {
        if (!cli_link_target_inside(mapped, link)) {
            ut_reject(u, name, "symlink points outside the destination");
            goto out;
        }
        if ((pfd = ut_open_parent(u, mapped, 1, &base)) < 0) { rc = ut_walk_failed(u, name, mapped); goto out; }
        int ok = symlinkat(link, pfd, base);
        if (ok < 0 && errno == EEXIST) {
            if (unlinkat(pfd, base, 0) < 0) { ut_reject(u, name, "a directory is in the way"); goto out; }
            ok = symlinkat(link, pfd, base);
        }
        if (ok < 0) { rc = ut_fail(u, "%s: %s", mapped, strerror(errno)); goto out; }
        u->entries++;
        break;
    }
    case '1': {
        size_t ll = strlen(link) + 1;
        if (!(lclean = malloc(ll))) { rc = ut_fail(u, ERR_OOM); goto out; }
        int lr = cli_path_clean_rel(link, lclean, ll);
        if (lr != 0 || !*lclean) { ut_reject(u, name, "hard link points outside the destination"); goto out; }
        lmapped = ut_map(u, lclean, &outside);
        if (outside || (lmapped && !*lmapped)) { ut_reject(u, name, "hard link points outside the destination"); goto out; }
        if (!lmapped) { rc = ut_fail(u, ERR_OOM); goto out; }
        if ((tfd = ut_open_parent(u, lmapped, 0, &tbase)) < 0) {
            if (errno == ENOENT) { ut_reject(u, name, "hard link target is missing"); goto out; }
            rc = ut_walk_failed(u, name, lmapped);
            goto out;
        }
        if ((pfd = ut_open_parent(u, mapped, 1, &base)) < 0) { rc = ut_walk_failed(u, name, mapped); goto out; }
        int ok = linkat(tfd, tbase, pfd, base, 0);
        if (ok < 0 && errno == EEXIST) {
            if (unlinkat(pfd, base, 0) < 0) { ut_reject(u, name, "a directory is in the way"); goto out; }
            ok = linkat(tfd, tbase, pfd, base, 0);
        }
        if (ok < 0 && errno == ENOENT) { ut_reject(u, name, "hard link target is missing"); goto out; }
        if (ok < 0) { rc = ut_fail(u, "%s: %s", mapped, strerror(errno)); goto out; }
        u->entries++;
        break;
    }
    default: {
        char why[64];
        snprintf(why, sizeof(why), "unsupported entry type '%c'", type >= 0x20 && type < 0x7f ? type : '?');
        ut_reject(u, name, why);
        break;
    }
    }
out:
    if (pfd >= 0) close(pfd);
    if (tfd >= 0) close(tfd);
    free(clean);
    free(mapped);
    free(lclean);
    free(lmapped);
    return rc;
}

/* Parse a numeric header field: octal (space/NUL terminated) or GNU base-256. */
static int parse_num(const unsigned char *f, size_t width, uint64_t *out) {
    uint64_t v = 0;
    if (f[0] & 0x80) {
        if (f[0] == 0xff) return -1;           /* negative */
        v = f[0] & 0x7f;
        for (size_t i = 1; i < width; i++) {
            if (v > (UINT64_MAX >> 8)) return -1;
            v = (v << 8) | f[i];
        }
        *out = v;
        return 0;
    }
    size_t i = 0;
    while (i < width && f[i] == ' ') i++;
    for (; i < width && f[i] != '\0' && f[i] != ' '; i++) {
        if (f[i] < '0' || f[i] > '7') return -1;
        if (v > (UINT64_MAX >> 3)) return -1;
        v = v * 8 + (uint64_t)(f[i] - '0');
    }
    *out = v;
    return 0;
}

/* A fixed-size header string field as a NUL-terminated copy. */
static char *field_str(const unsigned char *f, size_t width) {
    size_t n = strnlen((const char *)f, width);
    char *p = malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, f, n);
    p[n] = '\0';
    return p;
}

/* Replace *slot with a copy of [p, p+n). */
static int set_str(char **slot, const char *p, size_t n) {
    char *s = malloc(n + 1);
    if (!s) return -1;
    memcpy(s, p, n);
    s[n] = '\0';
    free(*slot);
    *slot = s;
    return 0;
}

/* Interpret a collected meta entry (pax records or a GNU long name). */
static int ut_meta_done(struct cli_untar *u) {
    const char *p = u->meta.data ? u->meta.data : "";
    size_t n = u->meta.len;
    if (u->meta_type == 'L' || u->meta_type == 'K') {
        size_t len = strnlen(p, n);
        if (set_str(u->meta_type == 'L' ? &u->long_name : &u->long_link, p, len) < 0)
            return ut_fail(u, ERR_OOM);
    } else if (u->meta_type == 'x') {
        size_t off = 0;
        while (off < n) {
            size_t len = 0, i = off;
            while (i < n && p[i] >= '0' && p[i] <= '9') {
                if (len > TAR_PAX_MAX) break;
                len = len * 10 + (size_t)(p[i++] - '0');
            }
            if (i == off || i >= n || p[i] != ' ' || len > n - off || len < (i - off) + 3 ||
                p[off + len - 1] != '\n')
                return ut_fail(u, "malformed pax header");
            const char *kv = p + i + 1, *end = p + off + len - 1;
            const char *eq = memchr(kv, '=', (size_t)(end - kv));
            if (!eq) return ut_fail(u, "malformed pax header");
            size_t kl = (size_t)(eq - kv), vl = (size_t)(end - eq - 1);
            int rc = 0;
            if (kl == 4 && !memcmp(kv, "path", 4)) rc = set_str(&u->pax_path, eq + 1, vl);
            else if (kl == 8 && !memcmp(kv, "linkpath", 8)) rc = set_str(&u->pax_link, eq + 1, vl);
            else if (kl == 4 && !memcmp(kv, "size", 4)) {
                uint64_t v = 0;
                if (vl == 0 || vl > 20) return ut_fail(u, "malformed pax size");
                for (size_t k = 0; k < vl; k++) {
                    char c = eq[1 + k];
                    if (c < '0' || c > '9' || v > (UINT64_MAX - 9) / 10) return ut_fail(u, "malformed pax size");
                    v = v * 10 + (uint64_t)(c - '0');
                }
                u->pax_size = v;
                u->have_pax_size = 1;
            }
            if (rc < 0) return ut_fail(u, ERR_OOM);
            off += len;
        }
    }   /* 'g': global records are not used */
    dynbuf_reset(&u->meta);
    u->meta_type = 0;
    return 0;
}

/* The current entry's data is complete: close its file or interpret its meta data. */
static int ut_data_done(struct cli_untar *u) {
    if (u->meta_type) return ut_meta_done(u);
    if (u->out_fd >= 0) {
        int fd = u->out_fd;
        u->out_fd = -1;
        if (fchmod(fd, u->out_mode) < 0) { close(fd); return ut_fail(u, "chmod: %s", strerror(errno)); }
        if (close(fd) < 0) return ut_fail(u, "close: %s", strerror(errno));
    }
    return 0;
}

/* Enter the data phase for size bytes (or go straight to the next header). */
static int ut_expect_data(struct cli_untar *u, uint64_t size) {
    u->remaining = size;
    u->pad = tar_pad_of(size);
    u->state = UT_DATA;
    if (size == 0) {
        u->state = UT_HEADER;
        return ut_data_done(u);
    }
    return 0;
}

/* Clear the pending long-name / pax values after the entry they described. */
static void ut_clear_pending(struct cli_untar *u) {
    free(u->pax_path); free(u->pax_link); free(u->long_name); free(u->long_link);
    u->pax_path = u->pax_link = u->long_name = u->long_link = NULL;
    u->have_pax_size = 0;
}

/* A complete header block arrived. */
static int ut_header(struct cli_untar *u) {
    const unsigned char *h = u->hdr;
    size_t i;
    for (i = 0; i < TAR_BLOCK && h[i] == 0; i++) {}
    if (i == TAR_BLOCK) {
        if (++u->zero_blocks >= 2) u->state = UT_END;
        return 0;
    }
    u->zero_blocks = 0;
    uint64_t stored;
    unsigned usum = 0;
    int ssum = 0;
    for (i = 0; i < TAR_BLOCK; i++) {
        unsigned char c = (i >= 148 && i < 156) ? ' ' : h[i];
        usum += c;
        ssum += (signed char)c;
    }
    if (parse_num(h + 148, 8, &stored) < 0 || (stored != usum && (int64_t)stored != ssum))
        return ut_fail(u, "not a tar archive (bad header checksum)");
    char type = (char)h[156];
    uint64_t size, mode;
    if (parse_num(h + 124, 12, &size) < 0) return ut_fail(u, "bad size in a tar header");
    if (parse_num(h + 100, 8, &mode) < 0) mode = 0644;
    if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
        uint64_t cap = (type == 'L' || type == 'K') ? TAR_LONGNAME_MAX : TAR_PAX_MAX;
        if (size > cap) return ut_fail(u, "tar extended header too large (%llu bytes)", (unsigned long long)size);
        u->meta_type = type;
        dynbuf_reset(&u->meta);
        return ut_expect_data(u, size);
    }
    if (u->have_pax_size) size = u->pax_size;
    /* symlinks, directories, hard links carry no data whatever the size field says */
    if (type == '1' || type == '2' || type == '5') size = 0;
    char *name = NULL, *link = NULL;
    if (u->pax_path) name = strdup(u->pax_path);
    else if (u->long_name) name = strdup(u->long_name);
    else {
        char *nm = field_str(h, 100);
        char *prefix = !memcmp(h + 257, "ustar", 5) ? field_str(h + 345, 155) : NULL;
        if (nm && prefix && *prefix) { name = cli_path_append(prefix, nm); free(nm); }
        else name = nm;
        free(prefix);
    }
    if (u->pax_link) link = strdup(u->pax_link);
    else if (u->long_link) link = strdup(u->long_link);
    else link = field_str(h + 157, 100);
    ut_clear_pending(u);
    int rc;
    if (!name || !link) rc = ut_fail(u, ERR_OOM);
    else if (!*name) { ut_reject(u, "", "empty name"); rc = 0; }
    else rc = ut_create(u, type, name, link, (unsigned)mode);
    free(name);
    free(link);
    if (rc < 0) return -1;
    return ut_expect_data(u, size);
}

/* Start extracting into o->dest_dir (see header). */
struct cli_untar *cli_untar_new(const struct cli_untar_options *o, char *err, size_t errlen) {
    if ((o->from == NULL) != (o->to == NULL)) {
        errfmt(err, errlen, "from and to go together");
        return NULL;
    }
    struct cli_untar *u = calloc(1, sizeof(*u));
    if (!u) { errfmt_oom(err, errlen); return NULL; }
    u->destfd = -1;
    u->out_fd = -1;
    dynbuf_init(&u->meta, TAR_PAX_MAX);
    if (o->from && (!(u->from = strdup(o->from)) || !(u->to = strdup(o->to)))) {
        errfmt_oom(err, errlen);
        cli_untar_free(u);
        return NULL;
    }
    u->destfd = open(o->dest_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (u->destfd < 0) {
        errfmt(err, errlen, "%s: %s", o->dest_dir, strerror(errno));
        cli_untar_free(u);
        return NULL;
    }
    u->on_reject = o->on_reject;
    u->ud = o->ud;
    return u;
}

/* Consume archive bytes (see header). */
int cli_untar_feed(struct cli_untar *u, const void *data, size_t len) {
    const unsigned char *p = data;
    if (u->failed) return -1;
    while (len > 0) {
        if (u->state == UT_END) return 0;
        if (u->state == UT_HEADER) {
            size_t k = TAR_BLOCK - u->hdr_fill;
            if (k > len) k = len;
            memcpy(u->hdr + u->hdr_fill, p, k);
            u->hdr_fill += k;
            p += k;
            len -= k;
            if (u->hdr_fill == TAR_BLOCK) {
                u->hdr_fill = 0;
                if (ut_header(u) < 0) return -1;
            }
            continue;
        }
        /* UT_DATA */
        if (u->remaining > 0) {
            size_t k = u->remaining < len ? (size_t)u->remaining : len;
            if (u->meta_type) {
                if (dynbuf_append(&u->meta, p, k) < 0) return ut_fail(u, ERR_OOM);
            } else if (u->out_fd >= 0 && cli_write_all(u->out_fd, p, k) < 0) {
                return ut_fail(u, "write: %s", strerror(errno));
            }
            p += k;
            len -= k;
            u->remaining -= k;
            if (u->remaining == 0 && ut_data_done(u) < 0) return -1;
        } else {
            size_t k = u->pad < len ? (size_t)u->pad : len;
            p += k;
            len -= k;
            u->pad -= k;
        }
        if (u->remaining == 0 && u->pad == 0) u->state = UT_HEADER;
    }
    return 0;
}

/* The archive ended (see header). */
int cli_untar_finish(struct cli_untar *u) {
    if (!u->failed && u->state != UT_END) {
        int between = u->state == UT_HEADER && u->hdr_fill == 0 && !u->meta_type &&
                      !u->pax_path && !u->long_name && !u->have_pax_size;
        if (!between) ut_fail(u, "the archive is truncated");
        else if (!u->zero_blocks && u->entries + u->rejected == 0) ut_fail(u, "the archive is empty");
    }
    if (u->out_fd >= 0) { close(u->out_fd); u->out_fd = -1; }
    for (size_t i = u->ndirs; i-- > 0;) {
        const char *base;
        int pfd = ut_open_parent(u, u->dirs[i].rel, 0, &base);
        int dfd = pfd < 0 ? -1 : openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0 || fchmod(dfd, u->dirs[i].mode) < 0)
            ut_fail(u, "%s: cannot set mode: %s", u->dirs[i].rel, strerror(errno));
        if (dfd >= 0) close(dfd);
        if (pfd >= 0) close(pfd);
        free(u->dirs[i].rel);
    }
    u->ndirs = 0;
    return u->failed ? -1 : 0;
}

/* Why the extractor failed; the counters below. */
const char *cli_untar_error(const struct cli_untar *u) { return u->err; }
size_t cli_untar_rejected(const struct cli_untar *u) { return u->rejected; }
size_t cli_untar_entries(const struct cli_untar *u) { return u->entries; }

/* Release the extractor (an unfinished file is closed as it is). */
void cli_untar_free(struct cli_untar *u) {
    if (!u) return;
    if (u->out_fd >= 0) close(u->out_fd);
    if (u->destfd >= 0) close(u->destfd);
    for (size_t i = 0; i < u->ndirs; i++) free(u->dirs[i].rel);
    free(u->dirs);
    dynbuf_free(&u->meta);
    ut_clear_pending(u);
    free(u->from);
    free(u->to);
    free(u);
}
