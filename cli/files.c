/* cli/files.c — the pure half of the yao-sandbox CLI's file helpers (see
 * files.h): sandbox path handling, a pull-model tar writer over a local tree, a
 * streaming tar extractor that treats the archive as hostile, the portable listing script
 * and its parser, cp's remote checks and the message of a failed remote command, the
 * exec -w/-e command wrapper and exec's small decisions (terminal size, a sandbox
 * stopped under a command, exit codes).
 *
 * The extractor's safety does not rest on name checks alone: every path is opened one
 * component at a time below the destination with O_NOFOLLOW, so no symlink — from the
 * archive or already on disk — is ever followed while writing. Names with "..", absolute
 * names, and links whose targets leave the destination are refused before that.
 * Known limits: hard links are not detected when writing (each link is stored as a file);
 * sparse files are stored expanded; the extractor refuses GNU sparse and device entries. */
#include "cli/files.h"

#include <ctype.h>
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

#define TAR_BLOCK 512
#define TAR_HEADERS_MAX (1u << 20)   /* pending header bytes of one entry (pax + ustar) */
#define TAR_PAX_MAX (1u << 20)       /* a pax extended header we accept */
#define TAR_LONGNAME_MAX (64u << 10) /* a GNU 'L'/'K' long name we accept */
#define TAR_OCTAL11_MAX 077777777777ULL

/* Copy a string into a fresh allocation; NULL on ENOMEM. */
static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* a + "/" + b (no doubled slash when a ends in one; "" a gives b). NULL on ENOMEM. */
static char *join_path(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    int slash = la > 0 && a[la - 1] != '/';
    char *p = malloc(la + (size_t)slash + lb + 1);
    if (!p) return NULL;
    memcpy(p, a, la);
    if (slash) p[la] = '/';
    memcpy(p + la + (size_t)slash, b, lb + 1);
    return p;
}

/* ---- paths ---------------------------------------------------------------------------- */

/* Resolve a sandbox path against base (see header). */
char *cli_path_join(const char *base, const char *path) {
    if (!path) path = "";
    if (path[0] == '/' || !base || !*base) return dup_str(*path ? path : ".");
    if (!*path) return dup_str(base);
    return join_path(base, path);
}

/* dirname/basename for tar -C DIR NAME (see header). */
int cli_path_split(const char *path, char **dir, char **name) {
    *dir = *name = NULL;
    if (!path || !*path) return -1;
    char *p = dup_str(path);
    if (!p) return -1;
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
    char *slash = strrchr(p, '/');
    const char *base = slash ? slash + 1 : p;
    if (!strcmp(p, "/") || !strcmp(base, ".") || !strcmp(base, "..")) {
        *dir = p;
        *name = dup_str(".");
        p = NULL;
    } else if (!slash) {
        *dir = dup_str(".");
        *name = p;
        p = NULL;
    } else {
        *name = dup_str(base);
        if (slash == p) slash[1] = '\0'; else *slash = '\0';
        *dir = p;
        p = NULL;
    }
    free(p);
    if (!*dir || !*name) { free(*dir); free(*name); *dir = *name = NULL; return -1; }
    return 0;
}

/* Canonical relative member name (see header). */
int cli_path_clean_rel(const char *in, char *out, size_t outlen) {
    size_t o = 0;
    if (outlen) out[0] = '\0';
    if (in[0] == '/') return -1;
    const char *p = in;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') { if (outlen) out[0] = '\0'; return -2; }
        if (n > 0 && !(n == 1 && p[0] == '.')) {
            if (o + (o ? 1 : 0) + n + 1 > outlen) { if (outlen) out[0] = '\0'; return -3; }
            if (o) out[o++] = '/';
            memcpy(out + o, p, n);
            o += n;
            out[o] = '\0';
        }
        p += n;
        if (*p == '/') p++;
    }
    return 0;
}

/* Whether a symlink's target stays inside the extraction tree (see header). */
int cli_link_target_inside(const char *entry, const char *target) {
    if (!entry || !*entry || !target || !*target || target[0] == '/') return 0;
    long depth = 0;                       /* components of the link's directory */
    for (const char *p = entry; *p; p++) if (*p == '/') depth++;
    long ups = 0;
    int normal = 0;
    const char *p = target;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (normal) return 0;
            ups++;
        } else if (n > 0 && !(n == 1 && p[0] == '.')) {
            normal = 1;
        }
        p += n;
        if (*p == '/') p++;
    }
    return ups <= depth;
}

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

/* Zero padding after n bytes of data up to the next block. */
static size_t pad_of(uint64_t n) { return (size_t)((TAR_BLOCK - n % TAR_BLOCK) % TAR_BLOCK); }

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
            rc = dynbuf_append(out, zeros, pad_of(pax.len));
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
        if (!(f.kids[f.nkids] = dup_str(e->d_name))) { rc = -1; break; }
        f.nkids++;
    }
    if (rc == 0 && errno) rc = -1;
    int saved = errno;
    closedir(d);
    if (rc == 0) { f.path = dup_str(path); f.name = dup_str(name); }
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
        if (!(s->fd_path = dup_str(path))) { close(fd); return src_fail(s, "out of memory"); }
        s->fd = fd;
        s->remaining = (uint64_t)st.st_size;
        s->pad = pad_of(s->remaining);
        return 0;
    }
    if (S_ISDIR(st.st_mode)) {
        char *dname = join_path(name, "");   /* "name/" */
        if (!dname) return src_fail(s, "out of memory");
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
        char *path = join_path(top->path, kid);
        char *name = join_path(top->name, kid);
        int rc = path && name ? emit(s, path, name, 0) : src_fail(s, "out of memory");
        free(path);
        free(name);
        if (rc == 1) continue;
        return rc;
    }
    static const char trailer[2 * TAR_BLOCK];
    if (dynbuf_append(&s->pend, trailer, sizeof(trailer)) < 0) return src_fail(s, "out of memory");
    s->done = 1;
    return 0;
}

/* Start an archive of local_path as `name` (see header). */
struct cli_tar_src *cli_tar_src_new(const char *local_path, const char *name,
                                    cli_note_fn note, void *ud, char *err, size_t errlen) {
    char clean[PATH_MAX];
    struct stat st;
    if (!name || cli_path_clean_rel(name, clean, sizeof(clean)) != 0 || !*clean || strcmp(clean, name)) {
        snprintf(err, errlen, "invalid archive name \"%s\"", name ? name : "");
        return NULL;
    }
    if (stat(local_path, &st) < 0) {
        snprintf(err, errlen, "%s: %s", local_path, strerror(errno));
        return NULL;
    }
    struct cli_tar_src *s = calloc(1, sizeof(*s));
    if (!s || !(s->root_path = dup_str(local_path)) || !(s->root_name = dup_str(name))) {
        if (s) { free(s->root_path); free(s); }
        snprintf(err, errlen, "out of memory");
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

/* ---- extractor ------------------------------------------------------------------------ */

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
    if (!u->from) return dup_str(clean);
    const char *rest;
    size_t fl = strlen(u->from);
    if (fl == 0) rest = clean;
    else if (!strcmp(clean, u->from)) rest = "";
    else if (!strncmp(clean, u->from, fl) && clean[fl] == '/') rest = clean + fl + 1;
    else { *outside = 1; return NULL; }
    if (!*u->to) return dup_str(rest);
    if (!*rest) return dup_str(u->to);
    return join_path(u->to, rest);
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
        if (!nd) return ut_fail(u, "out of memory");
        u->dirs = nd;
        u->capdirs = ncap;
    }
    if (!(u->dirs[u->ndirs].rel = dup_str(rel))) return ut_fail(u, "out of memory");
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
    if (!clean) return ut_fail(u, "out of memory");
    int cr = cli_path_clean_rel(name, clean, nl);
    if (cr == -1) { ut_reject(u, name, "absolute path"); goto out; }
    if (cr == -2) { ut_reject(u, name, "path contains \"..\""); goto out; }
    if (cr != 0) { rc = ut_fail(u, "out of memory"); goto out; }
    mapped = ut_map(u, clean, &outside);
    if (outside) { ut_reject(u, name, "not part of the requested path"); goto out; }
    if (!mapped) { rc = ut_fail(u, "out of memory"); goto out; }
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
        if (!(lclean = malloc(ll))) { rc = ut_fail(u, "out of memory"); goto out; }
        int lr = cli_path_clean_rel(link, lclean, ll);
        if (lr != 0 || !*lclean) { ut_reject(u, name, "hard link points outside the destination"); goto out; }
        lmapped = ut_map(u, lclean, &outside);
        if (outside || (lmapped && !*lmapped)) { ut_reject(u, name, "hard link points outside the destination"); goto out; }
        if (!lmapped) { rc = ut_fail(u, "out of memory"); goto out; }
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
            return ut_fail(u, "out of memory");
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
            if (rc < 0) return ut_fail(u, "out of memory");
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
    u->pad = pad_of(size);
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
    if (u->pax_path) name = dup_str(u->pax_path);
    else if (u->long_name) name = dup_str(u->long_name);
    else {
        char *nm = field_str(h, 100);
        char *prefix = !memcmp(h + 257, "ustar", 5) ? field_str(h + 345, 155) : NULL;
        if (nm && prefix && *prefix) { name = join_path(prefix, nm); free(nm); }
        else name = nm;
        free(prefix);
    }
    if (u->pax_link) link = dup_str(u->pax_link);
    else if (u->long_link) link = dup_str(u->long_link);
    else link = field_str(h + 157, 100);
    ut_clear_pending(u);
    int rc;
    if (!name || !link) rc = ut_fail(u, "out of memory");
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
        snprintf(err, errlen, "from and to go together");
        return NULL;
    }
    struct cli_untar *u = calloc(1, sizeof(*u));
    if (!u) { snprintf(err, errlen, "out of memory"); return NULL; }
    u->destfd = -1;
    u->out_fd = -1;
    dynbuf_init(&u->meta, TAR_PAX_MAX);
    if (o->from && (!(u->from = dup_str(o->from)) || !(u->to = dup_str(o->to)))) {
        snprintf(err, errlen, "out of memory");
        cli_untar_free(u);
        return NULL;
    }
    u->destfd = open(o->dest_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (u->destfd < 0) {
        snprintf(err, errlen, "%s: %s", o->dest_dir, strerror(errno));
        cli_untar_free(u);
        return NULL;
    }
    u->on_reject = o->on_reject;
    u->ud = o->ud;
    return u;
}

int cli_write_all(int fd, const void *data, size_t n) {
    const unsigned char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
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
                if (dynbuf_append(&u->meta, p, k) < 0) return ut_fail(u, "out of memory");
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

/* ---- listings ------------------------------------------------------------------------- */

/* Free a listing. */
void cli_file_infos_free(struct cli_file_info *v, size_t n) {
    if (!v) return;
    for (size_t i = 0; i < n; i++) { free(v[i].name); free(v[i].link); }
    free(v);
}

/* The listing (see the header). Kept to what busybox ash and busybox stat do as well as
 * dash/bash and GNU stat, and short (it travels in the exec URL, which lws caps): e NAMES
 * prints a group — one `stat -c` for all its names (one process, not one per entry), and
 * when that fails because an entry vanished meanwhile (its lines would no longer match the
 * names), one stat per entry with "-" for the missing; readlink for link targets ("&&echo
 * ." keeps a target's trailing newlines from $(...)). The groups of a directory come from
 * three globs (plain names, dot names, dot-dot names: "." and ".." excluded); a glob that
 * matched nothing stays as it is, and names nothing that exists. */
const char CLI_LIST_SCRIPT[] =
    "p=$2\n"
    "command -v stat >/dev/null||{ echo stat is not available in the sandbox image >&2;exit 127;}\n"
    "[ -e \"$p\" ]||[ -L \"$p\" ]||{ printf '%s: No such file or directory\\n' \"$p\" >&2;exit 1;}\n"
    "e(){ f=$1;shift;echo $#\n"
    "for x;do t=;[ -z \"$f\" ]&&[ -L \"$x\" ]&&t=$(readlink -- \"$x\"&&echo .)&&t=${t%??}\n"
    "printf '%s\\0%s\\0' \"$x\" \"$t\";done\n"
    "if s=$(stat $f -c '%f %s %Y' -- \"$@\" 2>/dev/null);then echo \"$s\"\n"
    "else for x;do stat $f -c '%f %s %Y' -- \"$x\" 2>/dev/null||echo -;done;fi;}\n"
    "if [ $1 = ls ]&&[ -e \"$p\" ];then e -L \"$p\";else e '' \"$p\";fi\n"
    "[ $1 = ls ]&&[ -d \"$p\" ]||exit 0\n"
    "CDPATH= cd -- \"$p\"&&[ -r . ]||{ printf '%s: Permission denied\\n' \"$p\" >&2;exit 1;}\n"
    "for g in '*' '.[!.]*' '..?*';do set -- $g;{ [ -e \"$1\" ]||[ -L \"$1\" ];}&&e '' \"$@\";done\n"
    "exit 0\n";

/* Type letter of a raw st_mode (S_IFMT bits, as stat's %f gives them). */
static char type_of_mode(unsigned long m) {
    switch (m & 0170000) {
    case 0100000: return 'f';
    case 0040000: return 'd';
    case 0120000: return 'l';
    case 0010000: return 'p';
    case 0140000: return 's';
    case 0020000: return 'c';
    case 0060000: return 'b';
    default: return '?';
    }
}

/* One "MODE SIZE MTIME" line (hex, decimal, decimal seconds). 0, 1 for "-", or -1. */
static int parse_stat_line(const char *l, struct cli_file_info *fi) {
    char *end;
    if (!strcmp(l, "-")) return 1;
    if (!isxdigit((unsigned char)l[0])) return -1;
    errno = 0;
    unsigned long m = strtoul(l, &end, 16);
    if (errno || *end != ' ' || !isdigit((unsigned char)end[1])) return -1;
    uint64_t size = strtoull(end + 1, &end, 10);
    if (errno || *end != ' ') return -1;
    const char *t = end + 1;
    if (!(isdigit((unsigned char)t[0]) || (t[0] == '-' && isdigit((unsigned char)t[1])))) return -1;
    long long sec = strtoll(t, &end, 10);
    if (errno || *end || sec > INT64_MAX / 1000 || sec < INT64_MIN / 1000) return -1;
    fi->type = type_of_mode(m);
    fi->mode = (unsigned)(m & 07777);
    fi->size = size;
    fi->mtime_ms = (int64_t)sec * 1000;
    return 0;
}

/* The base name ls shows (see header). */
char *cli_base_name(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    if (n == 1 && path[0] == '/') return dup_str("/");
    size_t b = n;
    while (b > 0 && path[b - 1] != '/') b--;
    char *r = malloc(n - b + 1);
    if (!r) return NULL;
    memcpy(r, path + b, n - b);
    r[n - b] = '\0';
    return r;
}

/* Parse a listing (see header). */
int cli_listing_parse(const char *buf, size_t len, struct cli_file_info **out, size_t *n) {
    struct cli_file_info *v = NULL;
    size_t cnt = 0, cap = 0, pos = 0;
    int first_group = 1;
    *out = NULL;
    *n = 0;
    while (pos < len) {
        /* the count */
        const char *nl = memchr(buf + pos, '\n', len - pos);
        if (!nl || nl == buf + pos) goto bad;
        char num[24];
        size_t nlen = (size_t)(nl - (buf + pos));
        if (nlen >= sizeof(num)) goto bad;
        memcpy(num, buf + pos, nlen);
        num[nlen] = '\0';
        if (strspn(num, "0123456789") != nlen) goto bad;
        unsigned long long k = strtoull(num, NULL, 10);
        if (k > len) goto bad;                        /* each entry takes bytes */
        pos = (size_t)(nl + 1 - buf);
        if (first_group && k != 1) goto bad;
        if (cnt + k > cap) {
            size_t ncap = cap ? cap : 16;
            while (ncap < cnt + k) ncap *= 2;
            struct cli_file_info *nv = realloc(v, ncap * sizeof(*nv));
            if (!nv) goto bad;
            v = nv;
            cap = ncap;
        }
        /* k names with link targets */
        size_t base = cnt;
        for (unsigned long long i = 0; i < k; i++) {
            const char *z1 = memchr(buf + pos, '\0', len - pos);
            if (!z1 || z1 == buf + pos) goto bad;     /* names are never empty */
            const char *lnk = z1 + 1;
            const char *z2 = lnk < buf + len ? memchr(lnk, '\0', (size_t)(buf + len - lnk)) : NULL;
            if (!z2) goto bad;
            memset(&v[cnt], 0, sizeof(v[cnt]));
            v[cnt].name = first_group ? cli_base_name(buf + pos) : dup_str(buf + pos);
            v[cnt].link = dup_str(lnk);
            cnt++;
            if (!v[cnt - 1].name || !v[cnt - 1].link) goto bad;
            pos = (size_t)(z2 + 1 - buf);
        }
        /* k stat lines, in the same order; a vanished entry is dropped */
        size_t keep = base;
        for (size_t i = base; i < cnt; i++) {
            const char *e = memchr(buf + pos, '\n', len - pos);
            char line[96];
            if (!e || (size_t)(e - (buf + pos)) >= sizeof(line)) goto bad;
            memcpy(line, buf + pos, (size_t)(e - (buf + pos)));
            line[e - (buf + pos)] = '\0';
            pos = (size_t)(e + 1 - buf);
            int r = parse_stat_line(line, &v[i]);
            if (r < 0) goto bad;
            if (r == 1) {
                free(v[i].name);
                free(v[i].link);
                v[i].name = v[i].link = NULL;
                continue;
            }
            if (v[i].type != 'l') v[i].link[0] = '\0';
            if (keep != i) {
                v[keep] = v[i];
                v[i].name = v[i].link = NULL;
            }
            keep++;
        }
        if (first_group && keep == base) { cnt = keep; goto bad; }   /* the path itself vanished */
        cnt = keep;
        first_group = 0;
    }
    if (!cnt) {
        free(v);
        v = NULL;
    }
    *out = v;
    *n = cnt;
    return 0;
bad:
    cli_file_infos_free(v, cnt);
    return -1;
}

/* "drwxr-xr-x" for a type and mode. */
void cli_mode_string(char type, unsigned mode, char *out) {
    const char *types = "f-dd" "ll" "pp" "ss" "cc" "bb";
    out[0] = '?';
    for (size_t i = 0; types[i]; i += 2) if (types[i] == type) { out[0] = types[i + 1]; break; }
    static const char rwx[] = "rwxrwxrwx";
    for (int i = 0; i < 9; i++) out[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
    if (mode & 04000) out[3] = out[3] == 'x' ? 's' : 'S';
    if (mode & 02000) out[6] = out[6] == 'x' ? 's' : 'S';
    if (mode & 01000) out[9] = out[9] == 'x' ? 't' : 'T';
    out[10] = '\0';
}

/* ---- cp's remote scripts, remote messages ----------------------------------------------- */

/* tar as a direct exec finds it: an executable file in a PATH directory (cp in runs tar
 * without a shell). `command -v` would not do: a busybox shell built to run its applets
 * answers "tar" for an applet that has no link, which no direct exec could run. */
#define CP_FIND_TAR                                                                     \
    "t=;IFS=:;for d in $PATH;do [ -f \"${d:-.}/tar\" ]&&[ -x \"${d:-.}/tar\" ]&&{ t=${d:-.}/tar;break;};done;unset IFS\n" \
    "[ -n \"$t\" ]||{ echo 'tar is not available in the sandbox image' >&2;exit 127;}\n"

const char CLI_STDIN_CHILD[] = "\"$@\"; exit $?";

const char CLI_CP_IN_CHECK[] =
    CP_FIND_TAR
    "if [ -d \"$1\" ];then echo dir\n"
    "elif [ -d \"$2\" ];then echo new\n"
    "else printf '%s: no such directory in the sandbox\\n' \"$2\" >&2;exit 1\n"
    "fi\n";

const char CLI_CP_OUT_SCRIPT[] =
    CP_FIND_TAR
    "[ -e \"$1/$2\" ]||[ -L \"$1/$2\" ]||{ printf '%s: no such file or directory in the sandbox\\n' \"$3\" >&2;exit 2;}\n"
    "exec \"$t\" -cf - -C \"$1\" \"$2\"\n";

/* A line that only sums up earlier ones (GNU tar's closing words). */
static int summary_line(const char *l) {
    static const char *const sums[] = {"Error is not recoverable", "Exiting with failure status",
                                       "Error exit delayed from previous errors"};
    for (size_t i = 0; i < sizeof(sums) / sizeof(*sums); i++)
        if (strstr(l, sums[i])) return 1;
    return 0;
}

/* Whether p[0..n) names a program whose "NAME: " starts its complaints — the tools the
 * CLI runs, and the shells (a path such as "x: No such file" is no program). */
static int known_program(const char *p, size_t n) {
    static const char *const progs[] = {"tar", "sh", "dash", "bash", "ash", "busybox", "cat", "mkdir", "rm",
                                        "stat", "readlink", "dirname", "env", "find", "ls"};
    for (size_t i = 0; i < sizeof(progs) / sizeof(*progs); i++)
        if (strlen(progs[i]) == n && !strncmp(p, progs[i], n)) return 1;
    return 0;
}

/* The first meaningful stderr line (see header). */
void cli_remote_message(const char *buf, size_t len, char *out, size_t outlen) {
    if (!outlen) return;
    out[0] = '\0';
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - buf) : len;
        const char *l = buf + pos;
        size_t n = end - pos;
        pos = end + 1;
        while (n && (*l == ' ' || *l == '\t')) { l++; n--; }
        while (n && (l[n - 1] == '\r' || l[n - 1] == ' ' || l[n - 1] == '\t')) n--;
        if (!n) continue;
        char line[1024];
        if (n >= sizeof(line)) n = sizeof(line) - 1;
        memcpy(line, l, n);
        line[n] = '\0';
        if (summary_line(line)) continue;
        char *p = line;
        size_t k = strcspn(p, ":");
        if (p[k] == ':' && p[k + 1] == ' ' && known_program(p, k)) {
            p += k + 2;                                           /* "tar: ", "sh: " */
            k = strspn(p, "0123456789");
            if (k && p[k] == ':' && p[k + 1] == ' ') p += k + 2;  /* dash's "1: " */
        }
        snprintf(out, outlen, "%s", p);
        return;
    }
}

/* ---- exec's decisions ----------------------------------------------------------------- */

/* A whole number 1..65535, or 0. */
static unsigned small_count(const char *s) {
    if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 5) return 0;
    unsigned long v = strtoul(s, NULL, 10);
    return v >= 1 && v <= 65535 ? (unsigned)v : 0;
}

int cli_term_size_env(const char *columns, const char *lines, unsigned *width, unsigned *height) {
    unsigned w = small_count(columns), h = small_count(lines);
    if (!w || !h) return -1;
    *width = w;
    *height = h;
    return 0;
}

/* Two optional strings differ (both set and unequal, or only one set). */
static int differs(const char *a, const char *b) {
    if (!a || !*a) return b && *b;
    return !b || strcmp(a, b) != 0;
}

static int is(const char *s, const char *v) { return s && !strcmp(s, v); }

int cli_sandbox_stopped(const struct cli_sandbox_view *before, const struct cli_sandbox_view *after,
                        char *why, size_t whylen) {
    const char *r = after->reason;
    int known = is(r, "Idle") || is(r, "Paused");
    if (after->gone) {
        snprintf(why, whylen, "was deleted while the command ran");
        return 1;
    }
    if (after->deleting) {
        if (known) snprintf(why, whylen, "was deleted while the command ran (reason: %s)", r);
        else snprintf(why, whylen, "was deleted while the command ran");
        return 1;
    }
    if (is(after->phase, "Stopping") || is(after->phase, "Stopped") || after->paused || known) {
        const char *what = known ? r : after->paused ? "Paused" : after->phase;
        snprintf(why, whylen, "was stopped while the command ran (reason: %s)", what);
        return 1;
    }
    if (differs(before->pod, after->pod) || (before->started && after->started && differs(before->started, after->started))) {
        snprintf(why, whylen, "was restarted while the command ran (its pod was replaced)");
        return 1;
    }
    return 0;
}

int cli_exec_check_sandbox(int session_ok, int exit_code) {
    return !session_ok || exit_code == 137 || exit_code == 143;
}

int cli_exit_code(int exit_code) {
    return exit_code < 0 ? 1 : exit_code > 255 ? 255 : exit_code;
}

/* ---- exec -w / -e --------------------------------------------------------------------- */

/* The wrapped argv (see header). */
int cli_exec_argv(const char *const *cmd, size_t ncmd, const char *const *env, size_t nenv,
                  const char *workdir, const char ***out, size_t *nout) {
    *out = NULL;
    *nout = 0;
    if (ncmd == 0) return -1;
    for (size_t i = 0; i < nenv; i++) {
        const char *eq = strchr(env[i], '=');
        if (!eq || eq == env[i]) return -1;
    }
    int via_sh = !workdir && nenv && strchr(cmd[0], '=');
    size_t total = (nenv ? 1 + nenv : 0) + (workdir ? 4 : 0) + (via_sh ? 4 : 0) + ncmd;
    const char **v = malloc((total + 1) * sizeof(*v));
    if (!v) return -1;
    size_t k = 0;
    if (nenv) {
        v[k++] = "env";
        for (size_t i = 0; i < nenv; i++) v[k++] = env[i];
    }
    if (workdir) {
        v[k++] = "sh";
        v[k++] = "-c";
        v[k++] = "cd -- \"$0\" && exec \"$@\"";
        v[k++] = workdir;
    } else if (via_sh) {
        v[k++] = "sh";
        v[k++] = "-c";
        v[k++] = "exec \"$@\"";
        v[k++] = "sh";
    }
    for (size_t i = 0; i < ncmd; i++) v[k++] = cmd[i];
    v[k] = NULL;
    *out = v;
    *nout = k;
    return 0;
}
