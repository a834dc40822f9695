/* cli/tar_write.c — the tar stream `cp LOCAL SANDBOX:PATH` sends (see tar.h): ustar headers
 * with a pax extended header where ustar's fields are too small, and a pull-model archive
 * of a local tree that reads each file only as the archive reaches it, so the archive is
 * never held in memory. Directories go in name order, symlinks as symlinks, modes kept
 * (set-id bits dropped), owners not; sockets, fifos and devices are skipped with a note.
 * Known limits: hard links are not detected (each link is stored as a file); sparse files
 * are stored expanded. The extractor is tar_read.c. */
#include "cli/tar.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/dynbuf.h"
#include "base/errfmt.h"
#include "cli/paths.h"
#include "cli/tar_format.h"

#define TAR_HEADERS_MAX (1u << 20)   /* pending header bytes of one entry (pax + ustar) */
#define TAR_OCTAL11_MAX 077777777777ULL

/* ---- tar headers ---------------------------------------------------------------------- */

/* Octal into a ustar numeric field: width-1 zero-padded digits and a NUL. */
static void put_octal(unsigned char *f, size_t width, uint64_t v) {
    char tmp[24];
    snprintf(tmp, sizeof(tmp), "%0*llo", (int)(width - 1), (unsigned long long)v);
    memcpy(f, tmp, width - 1);
    f[width - 1] = '\0';
}

/* Decimal digits of n. */
static size_t digits(size_t n) {
    size_t d = 1;
    while (n >= 10) { n /= 10; d++; }
    return d;
}

/* One pax record "LEN key=value\n" (LEN counts the whole record, itself included). */
static int pax_record(struct dynbuf *b, const char *key, const char *value) {
    size_t body = 1 + strlen(key) + 1 + strlen(value) + 1;
    size_t n = body + digits(body);
    while (body + digits(n) != n) n = body + digits(n);
    if (dynbuf_printf(b, "%zu %s=", n, key) < 0) return -1;
    if (dynbuf_append_str(b, value) < 0) return -1;
    return dynbuf_append(b, "\n", 1);
}

/* Put name into the ustar name/prefix fields if it fits; 1 if it did. */
static int fit_ustar_name(unsigned char *h, const char *name) {
    size_t len = strlen(name);
    if (len <= 100) { memcpy(h, name, len); return 1; }
    if (len > 256) return 0;
    for (size_t p = len > 101 ? len - 101 : 0; p <= 155 && p < len; p++) {
        if (name[p] != '/' || p == 0 || len - p - 1 == 0) continue;
        memcpy(h + 345, name, p);
        memcpy(h, name + p + 1, len - p - 1);
        return 1;
    }
    return 0;
}

/* Fill in the checksum of a header block. */
static void set_checksum(unsigned char *h) {
    unsigned sum = 0;
    memset(h + 148, ' ', 8);
    for (size_t i = 0; i < TAR_BLOCK; i++) sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
}

/* Append one header block built from the fields given. */
static int append_block(struct dynbuf *out, const char *name_field, char type, unsigned mode,
                        uint64_t size, int64_t mtime, const char *linkname, const char *prefix) {
    unsigned char h[TAR_BLOCK];
    memset(h, 0, sizeof(h));
    if (prefix) {
        memcpy(h, name_field, strlen(name_field));
        memcpy(h + 345, prefix, strlen(prefix));
    } else if (!fit_ustar_name(h, name_field)) {
        memcpy(h, name_field, 99);   /* only reached via cli_tar_header: a pax path follows */
    }
    put_octal(h + 100, 8, mode & 07777);
    put_octal(h + 108, 8, 0);
    put_octal(h + 116, 8, 0);
    put_octal(h + 124, 12, size);
    put_octal(h + 136, 12, mtime < 0 ? 0 : (uint64_t)mtime > TAR_OCTAL11_MAX ? TAR_OCTAL11_MAX : (uint64_t)mtime);
    h[156] = (unsigned char)type;
    if (linkname) memcpy(h + 157, linkname, strlen(linkname) > 100 ? 100 : strlen(linkname));
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    put_octal(h + 329, 8, 0);
    put_octal(h + 337, 8, 0);
    set_checksum(h);
    return dynbuf_append(out, h, sizeof(h));
}

/* Header(s) of one entry (see header). */
int cli_tar_header(struct dynbuf *out, const char *name, char type, unsigned mode,
                   uint64_t size, int64_t mtime, const char *linkname) {
    unsigned char probe[TAR_BLOCK];
    memset(probe, 0, sizeof(probe));
    int name_fits = fit_ustar_name(probe, name);
    int link_fits = !linkname || strlen(linkname) <= 100;
    int size_fits = size <= TAR_OCTAL11_MAX;
    if (!name_fits || !link_fits || !size_fits) {
        struct dynbuf pax;
        dynbuf_init(&pax, TAR_PAX_MAX);
        int rc = 0;
        char num[32];
        if (!name_fits) rc |= pax_record(&pax, "path", name);
        if (!link_fits) rc |= pax_record(&pax, "linkpath", linkname);
        if (!size_fits) {
            snprintf(num, sizeof(num), "%llu", (unsigned long long)size);
            rc |= pax_record(&pax, "size", num);
        }
        if (rc == 0) rc = append_block(out, "././@PaxHeader", 'x', 0644, pax.len, mtime, NULL, NULL);
        if (rc == 0) rc = dynbuf_append(out, pax.data, pax.len);
        if (rc == 0) {
            static const char zeros[TAR_BLOCK];
            rc = dynbuf_append(out, zeros, tar_pad_of(pax.len));
        }
        dynbuf_free(&pax);
        if (rc != 0) return -1;
    }
    return append_block(out, name, type, mode, size_fits ? size : 0, mtime, linkname, NULL);
}

/* ---- tar source ----------------------------------------------------------------------- */

struct tar_frame {
    char *path, *name;   /* local directory, its member name */
    char **kids;         /* entry names, sorted */
    size_t nkids, next;
};

struct cli_tar_src {
    char *root_path, *root_name;
    int root_done;
    struct tar_frame *stack;
    size_t depth, cap;
    struct dynbuf pend;  /* headers (or the trailer) not yet handed out */
    size_t pend_off;
    int fd;              /* file whose data comes next, or -1 */
    uint64_t remaining;  /* its bytes still to send */
    size_t pad;          /* zero bytes after it */
    char *fd_path;
    int done, failed;
    cli_note_fn note;
    void *ud;
    char err[512];
};

/* Record a failure (printf-style). Returns -1. */
__attribute__((format(printf, 2, 3)))
static int src_fail(struct cli_tar_src *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    errfmt_v(s->err, sizeof(s->err), fmt, ap);
    va_end(ap);
    s->failed = 1;
    return -1;
}

/* qsort comparator for entry names. */
static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Free one directory frame. */
static void frame_free(struct tar_frame *f) {
    for (size_t i = 0; i < f->nkids; i++) free(f->kids[i]);
    free(f->kids);
    free(f->path);
    free(f->name);
}

/* Read a directory's entry names, sorted, into a new frame on the stack. */
static int push_dir(struct cli_tar_src *s, const char *path, const char *name) {
    DIR *d = opendir(path);
    if (!d) return src_fail(s, "%s: %s", path, strerror(errno));
    struct tar_frame f = {0};
    size_t cap = 0;
    struct dirent *e;
    int rc = 0;
    errno = 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (f.nkids == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **nk = realloc(f.kids, ncap * sizeof(*nk));
            if (!nk) { rc = -1; break; }
            f.kids = nk;
            cap = ncap;
        }
        if (!(f.kids[f.nkids] = strdup(e->d_name))) { rc = -1; break; }
        f.nkids++;
    }
    if (rc == 0 && errno) rc = -1;
    int saved = errno;
    closedir(d);
    if (rc == 0) { f.path = strdup(path); f.name = strdup(name); }
    if (rc == 0 && (!f.path || !f.name)) rc = -1;
    if (rc == 0 && s->depth == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 8;
        struct tar_frame *ns = realloc(s->stack, ncap * sizeof(*ns));
        if (!ns) rc = -1; else { s->stack = ns; s->cap = ncap; }
    }
    if (rc != 0) {
        frame_free(&f);
        return src_fail(s, "%s: %s", path, strerror(saved ? saved : ENOMEM));
    }
    if (f.nkids) qsort(f.kids, f.nkids, sizeof(*f.kids), cmp_names);
    s->stack[s->depth++] = f;
    return 0;
}

/* Queue the headers of one local object. 0 queued, 1 skipped (special file), -1 error. */
static int emit(struct cli_tar_src *s, const char *path, const char *name, int follow) {
    struct stat st;
    if ((follow ? stat(path, &st) : lstat(path, &st)) < 0)
        return src_fail(s, "%s: %s", path, strerror(errno));
    unsigned mode = (unsigned)st.st_mode & 01777;   /* set-id bits dropped */
    if (S_ISREG(st.st_mode)) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
        if (fd < 0) return src_fail(s, "%s: %s", path, strerror(errno));
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
            close(fd);
            return src_fail(s, "%s: changed while being read", path);
        }
        if (cli_tar_header(&s->pend, name, '0', mode, (uint64_t)st.st_size, st.st_mtime, NULL) < 0) {
            close(fd);
            return src_fail(s, "%s: name too long", path);
        }
        free(s->fd_path);
        if (!(s->fd_path = strdup(path))) { close(fd); return src_fail(s, ERR_OOM); }
        s->fd = fd;
        s->remaining = (uint64_t)st.st_size;
        s->pad = tar_pad_of(s->remaining);
        return 0;
    }
    if (S_ISDIR(st.st_mode)) {
        char *dname = cli_path_append(name, "");   /* "name/" */
        if (!dname) return src_fail(s, ERR_OOM);
        int rc = cli_tar_header(&s->pend, dname, '5', mode, 0, st.st_mtime, NULL);
        free(dname);
        if (rc < 0) return src_fail(s, "%s: name too long", path);
        return push_dir(s, path, name);
    }
    if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX + 1];
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n < 0) return src_fail(s, "%s: %s", path, strerror(errno));
        target[n] = '\0';
        if (cli_tar_header(&s->pend, name, '2', 0777, 0, st.st_mtime, target) < 0)
            return src_fail(s, "%s: name too long", path);
        return 0;
    }
    if (s->note) {
        char msg[PATH_MAX + 80];
        snprintf(msg, sizeof(msg), "skipping %s: not a regular file, directory or symlink", path);
        s->note(s->ud, msg);
    }
    return 1;
}

/* Queue the next entry's headers, or the end-of-archive blocks. 0 or -1. */
static int next_entry(struct cli_tar_src *s) {
    if (!s->root_done) {
        s->root_done = 1;
        int rc = emit(s, s->root_path, s->root_name, 1);
        if (rc <= 0) return rc;
    }
    while (s->depth > 0) {
        struct tar_frame *top = &s->stack[s->depth - 1];
        if (top->next == top->nkids) {
            frame_free(top);
            s->depth--;
            continue;
        }
        const char *kid = top->kids[top->next++];
        char *path = cli_path_append(top->path, kid);
        char *name = cli_path_append(top->name, kid);
        int rc = path && name ? emit(s, path, name, 0) : src_fail(s, ERR_OOM);
        free(path);
        free(name);
        if (rc == 1) continue;
        return rc;
    }
    static const char trailer[2 * TAR_BLOCK];
    if (dynbuf_append(&s->pend, trailer, sizeof(trailer)) < 0) return src_fail(s, ERR_OOM);
    s->done = 1;
    return 0;
}

/* Start an archive of local_path as `name` (see header). */
struct cli_tar_src *cli_tar_src_new(const char *local_path, const char *name,
                                    cli_note_fn note, void *ud, char *err, size_t errlen) {
    char clean[PATH_MAX];
    struct stat st;
    if (!name || cli_path_clean_rel(name, clean, sizeof(clean)) != 0 || !*clean || strcmp(clean, name)) {
        errfmt(err, errlen, "invalid archive name \"%s\"", name ? name : "");
        return NULL;
    }
    if (stat(local_path, &st) < 0) {
        errfmt(err, errlen, "%s: %s", local_path, strerror(errno));
        return NULL;
    }
    struct cli_tar_src *s = calloc(1, sizeof(*s));
    if (!s || !(s->root_path = strdup(local_path)) || !(s->root_name = strdup(name))) {
        if (s) { free(s->root_path); free(s); }
        errfmt_oom(err, errlen);
        return NULL;
    }
    dynbuf_init(&s->pend, TAR_HEADERS_MAX);
    s->fd = -1;
    s->note = note;
    s->ud = ud;
    return s;
}

/* Hand out the next bytes of the archive (see header). */
ssize_t cli_tar_src_read(struct cli_tar_src *s, char *buf, size_t cap) {
    size_t got = 0;
    if (s->failed) return -1;
    while (got < cap) {
        if (s->pend_off < s->pend.len) {
            size_t k = s->pend.len - s->pend_off;
            if (k > cap - got) k = cap - got;
            memcpy(buf + got, s->pend.data + s->pend_off, k);
            s->pend_off += k;
            got += k;
            continue;
        }
        if (s->fd >= 0) {
            if (s->remaining == 0) { close(s->fd); s->fd = -1; continue; }
            size_t want = cap - got;
            if (want > s->remaining) want = (size_t)s->remaining;
            ssize_t r = read(s->fd, buf + got, want);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) return src_fail(s, "%s: %s", s->fd_path, strerror(errno));
            if (r == 0) return src_fail(s, "%s: file shrank while being read", s->fd_path);
            got += (size_t)r;
            s->remaining -= (uint64_t)r;
            continue;
        }
        if (s->pad > 0) {
            size_t k = s->pad < cap - got ? s->pad : cap - got;
            memset(buf + got, 0, k);
            s->pad -= k;
            got += k;
            continue;
        }
        if (s->done) break;
        dynbuf_reset(&s->pend);
        s->pend_off = 0;
        if (next_entry(s) < 0) return -1;
    }
    return (ssize_t)got;
}

/* Why cli_tar_src_read failed. */
const char *cli_tar_src_error(const struct cli_tar_src *s) { return s->err; }

/* Release the source, closing any open file. */
void cli_tar_src_free(struct cli_tar_src *s) {
    if (!s) return;
    while (s->depth > 0) frame_free(&s->stack[--s->depth]);
    free(s->stack);
    if (s->fd >= 0) close(s->fd);
    dynbuf_free(&s->pend);
    free(s->fd_path);
    free(s->root_path);
    free(s->root_name);
    free(s);
}
