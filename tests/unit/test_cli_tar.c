/* tests/unit/test_cli_tar.c — the CLI's tar code without a cluster (cli/tar_write.c,
 * cli/tar_read.c): the tar writer checked against GNU tar (listing and extraction), the safe
 * extractor against hostile archives (absolute names, "..", escaping symlinks and hard
 * links, paths through symlinks) and against archives GNU tar wrote (gnu and pax long
 * names), a round trip of a tree with a 5 MB binary file and a name with spaces and
 * unicode. (The paths are test_cli_paths.c, the listing parser test_cli_listing.c, the
 * exec -w/-e wrapper test_cli_exec.c; the remote scripts run in test_cli_remote.c.) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "base/dynbuf.h"
#include "cli/tar.h"

#define UNICODE_NAME "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93.txt"   /* "héllo wörld ✓.txt" */

/* ---- helpers -------------------------------------------------------------------------- */

static char *tmpdir_new(void) {
    const char *t = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof(tmpl), "%s/yao-cli-test-XXXXXX", t && *t ? t : "/tmp");
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    return rc == -1 ? -1 : WEXITSTATUS(rc);
}

static void rm_tree(char *d) {
    if (!d) return;
    sh("chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", d, d);
    free(d);
}

static int write_file(const char *path, const void *data, size_t n, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return -1;
    int rc = write(fd, data, n) == (ssize_t)n ? 0 : -1;
    if (fchmod(fd, mode) < 0) rc = -1;
    close(fd);
    return rc;
}

static char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    struct dynbuf b;
    dynbuf_init(&b, 64u << 20);
    char chunk[65536];
    size_t r;
    while ((r = fread(chunk, 1, sizeof(chunk), f)) > 0) dynbuf_append(&b, chunk, r);
    fclose(f);
    *n = b.len;
    return dynbuf_take(&b);
}

/* Stream a tar source into a file, in odd-sized reads. */
static int src_to_file(struct cli_tar_src *s, const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    char buf[7001];
    size_t caps[] = {1, 511, 512, 513, 7001, 4096, 3};
    ssize_t r;
    int i = 0;
    while ((r = cli_tar_src_read(s, buf, caps[i++ % 7])) > 0) fwrite(buf, 1, (size_t)r, f);
    fclose(f);
    return r == 0 ? 0 : -1;
}

struct rejects { int n; char last[700]; };
static void on_reject(void *ud, const char *msg) {
    struct rejects *r = ud;
    r->n++;
    snprintf(r->last, sizeof(r->last), "%s", msg);
}

/* Extract archive bytes into dest, fed in varying chunk sizes. Returns finish()'s result;
 * *rejected gets the rejected count. */
static int extract_bytes(const char *data, size_t n, const char *dest, const char *from,
                         const char *to, struct rejects *rj) {
    char err[256];
    struct cli_untar_options o = {.dest_dir = dest, .from = from, .to = to, .on_reject = on_reject, .ud = rj};
    struct cli_untar *u = cli_untar_new(&o, err, sizeof(err));
    if (!u) { fprintf(stderr, "  untar_new: %s\n", err); return -2; }
    size_t off = 0, step = 1;
    int rc = 0;
    while (off < n && rc == 0) {
        size_t k = step < n - off ? step : n - off;
        rc = cli_untar_feed(u, data + off, k);
        off += k;
        step = step * 3 + 7;
        if (step > 70000) step = 1;
    }
    if (rc == 0) rc = cli_untar_finish(u);
    if (rc != 0) fprintf(stderr, "  (untar: %s)\n", cli_untar_error(u));
    cli_untar_free(u);
    return rc;
}

static int extract_file(const char *archive, const char *dest, const char *from, const char *to,
                        struct rejects *rj) {
    size_t n;
    char *data = read_all(archive, &n);
    if (!data) return -2;
    int rc = extract_bytes(data, n, dest, from, to, rj);
    free(data);
    return rc;
}

static int exists(const char *path) { struct stat st; return lstat(path, &st) == 0; }
static unsigned mode_of(const char *path) { struct stat st; return lstat(path, &st) == 0 ? (unsigned)st.st_mode & 07777 : 0; }

/* Append a raw member (headers + data + padding) to an archive under construction. */
static void add_member(struct dynbuf *a, const char *name, char type, const char *data, const char *link) {
    size_t n = data ? strlen(data) : 0;
    CHECK_INT(cli_tar_header(a, name, type, type == '5' ? 0755 : 0644, n, 1700000000, link), 0);
    if (n) {
        static const char zeros[512];
        dynbuf_append(a, data, n);
        dynbuf_append(a, zeros, (512 - n % 512) % 512);
    }
}
static void end_archive(struct dynbuf *a) {
    static const char zeros[1024];
    dynbuf_append(a, zeros, sizeof(zeros));
}

/* ---- tar writer against GNU tar ------------------------------------------------------- */

TEST(writer_output_is_listed_and_extracted_by_gnu_tar) {
    char *d = tmpdir_new();
    CHECK(d != NULL);
    if (!d) return;
    char p[4096], longdir[300], longname[300];
    /* a 120-char file name (ustar prefix cannot help: pax path) and a >256 path */
    memset(longname, 'n', 120); longname[120] = '\0';
    memset(longdir, 'd', 90); longdir[90] = '\0';
    sh("mkdir -p '%s/src/tree/%s/%s'", d, longdir, longdir);
    snprintf(p, sizeof(p), "%s/src/tree/%s", d, longname);
    CHECK_INT(write_file(p, "long\n", 5, 0640), 0);
    snprintf(p, sizeof(p), "%s/src/tree/%s/%s/%s", d, longdir, longdir, longname);
    CHECK_INT(write_file(p, "deep\n", 5, 0600), 0);
    snprintf(p, sizeof(p), "%s/src/tree/run.sh", d);
    CHECK_INT(write_file(p, "#!/bin/sh\necho hi\n", 18, 0755), 0);
    snprintf(p, sizeof(p), "%s/src/tree/empty", d);
    CHECK_INT(write_file(p, "", 0, 0644), 0);
    sh("ln -s run.sh '%s/src/tree/link'", d);
    /* a symlink whose target is longer than 100 bytes */
    sh("ln -s '%s/%s' '%s/src/tree/longlink'", longdir, longname, d);

    char err[256];
    snprintf(p, sizeof(p), "%s/src/tree", d);
    struct cli_tar_src *s = cli_tar_src_new(p, "tree", NULL, NULL, err, sizeof(err));
    CHECK(s != NULL);
    if (s) {
        snprintf(p, sizeof(p), "%s/out.tar", d);
        CHECK_INT(src_to_file(s, p), 0);
        cli_tar_src_free(s);
        CHECK_INT(sh("tar -tvf '%s/out.tar' > '%s/list' 2>&1", d, d), 0);
        CHECK_INT(sh("grep -q 'tree/%s$' '%s/list'", longname, d), 0);
        CHECK_INT(sh("grep -q 'tree/%s/%s/%s$' '%s/list'", longdir, longdir, longname, d), 0);
        CHECK_INT(sh("grep -q '^lrwxrwxrwx .* tree/link -> run.sh$' '%s/list'", d), 0);
        CHECK_INT(sh("grep -q '^-rwxr-xr-x .* tree/run.sh$' '%s/list'", d), 0);
        CHECK_INT(sh("grep -q 'tree/longlink -> %s/%s$' '%s/list'", longdir, longname, d), 0);
        CHECK_INT(sh("[ \"$(wc -l < '%s/list')\" = 9 ]", d), 0);   /* 3 dirs + 4 files + 2 links */
        CHECK_INT(sh("mkdir '%s/gnu' && tar -xpf '%s/out.tar' -C '%s/gnu'", d, d, d), 0);
        CHECK_INT(sh("diff -r --no-dereference '%s/src/tree' '%s/gnu/tree'", d, d), 0);
        snprintf(p, sizeof(p), "%s/gnu/tree/run.sh", d);
        CHECK_INT(mode_of(p), 0755);
        snprintf(p, sizeof(p), "%s/gnu/tree/%s", d, longname);
        CHECK_INT(mode_of(p), 0640);
    }
    rm_tree(d);
}

TEST(writer_of_a_single_file_and_a_missing_path) {
    char *d = tmpdir_new();
    if (!d) { CHECK(0); return; }
    char p[1024], err[256];
    snprintf(p, sizeof(p), "%s/one.txt", d);
    CHECK_INT(write_file(p, "hello", 5, 0644), 0);
    struct cli_tar_src *s = cli_tar_src_new(p, "renamed.txt", NULL, NULL, err, sizeof(err));
    CHECK(s != NULL);
    if (s) {
        snprintf(p, sizeof(p), "%s/one.tar", d);
        CHECK_INT(src_to_file(s, p), 0);
        cli_tar_src_free(s);
        CHECK_INT(sh("[ \"$(tar -xOf '%s/one.tar' renamed.txt)\" = hello ]", d), 0);
        size_t n;
        free(read_all(p, &n));
        CHECK_INT(n, 512 + 512 + 1024);   /* header, one data block, trailer */
    }
    snprintf(p, sizeof(p), "%s/nope", d);
    CHECK(cli_tar_src_new(p, "nope", NULL, NULL, err, sizeof(err)) == NULL);
    CHECK(strstr(err, "No such file") != NULL);
    CHECK(cli_tar_src_new(d, "../up", NULL, NULL, err, sizeof(err)) == NULL);
    CHECK(cli_tar_src_new(d, "/abs", NULL, NULL, err, sizeof(err)) == NULL);
    rm_tree(d);
}

static int skipped;
static void on_skip(void *ud, const char *msg) { (void)ud; (void)msg; skipped++; }

TEST(writer_skips_special_files_with_a_note) {
    char *d = tmpdir_new();
    if (!d) { CHECK(0); return; }
    char err[256];
    CHECK_INT(sh("mkdir '%s/t' && mkfifo '%s/t/fifo' && echo x > '%s/t/f'", d, d, d), 0);
    char p[1024];
    snprintf(p, sizeof(p), "%s/t", d);
    skipped = 0;
    struct cli_tar_src *s = cli_tar_src_new(p, "t", on_skip, NULL, err, sizeof(err));
    if (s) {
        snprintf(p, sizeof(p), "%s/t.tar", d);
        CHECK_INT(src_to_file(s, p), 0);
        cli_tar_src_free(s);
        CHECK_INT(skipped, 1);
        CHECK_INT(sh("[ \"$(tar -tf '%s/t.tar' | tr '\\n' ,)\" = 't/,t/f,' ]", d), 0);
    } else CHECK(0);
    rm_tree(d);
}

/* ---- extractor against hostile archives ----------------------------------------------- */

TEST(extractor_rejects_escaping_entries_and_goes_on) {
    char *d = tmpdir_new();
    if (!d) { CHECK(0); return; }
    char dest[1024];
    snprintf(dest, sizeof(dest), "%s/dest/inner", d);
    sh("mkdir -p '%s'", dest);
    struct dynbuf a;
    dynbuf_init(&a, 1 << 20);
    add_member(&a, "../x", '0', "evil", NULL);
    add_member(&a, "/etc/passwd-yao-test", '0', "evil", NULL);
    add_member(&a, "a/../../x", '0', "evil", NULL);
    add_member(&a, "sl", '2', NULL, "../../outside");
    add_member(&a, "abs", '2', NULL, "/etc");
    add_member(&a, "sub/tricky", '2', NULL, "x/../../..");
    add_member(&a, "hl", '1', NULL, "../x");
    add_member(&a, "hl2", '1', NULL, "/etc/passwd");
    add_member(&a, "dev", '3', NULL, NULL);
    add_member(&a, "good/file.txt", '0', "fine\n", NULL);
    add_member(&a, "good/rel", '2', NULL, "file.txt");
    add_member(&a, "good/up", '2', NULL, "../good/file.txt");
    add_member(&a, "good/hard", '1', NULL, "good/file.txt");
    end_archive(&a);
    struct rejects rj = {0};
    CHECK_INT(extract_bytes(a.data, a.len, dest, NULL, NULL, &rj), 0);
    CHECK_INT(rj.n, 9);
    char p[1200];
    snprintf(p, sizeof(p), "%s/dest/x", d); CHECK(!exists(p));
    snprintf(p, sizeof(p), "%s/x", d); CHECK(!exists(p));
    CHECK(!exists("/etc/passwd-yao-test"));
    snprintf(p, sizeof(p), "%s/sl", dest); CHECK(!exists(p));
    snprintf(p, sizeof(p), "%s/abs", dest); CHECK(!exists(p));
    snprintf(p, sizeof(p), "%s/hl", dest); CHECK(!exists(p));
    snprintf(p, sizeof(p), "%s/good/file.txt", dest);
    size_t n = 0;
    char *c = read_all(p, &n);
    CHECK(c && n == 5 && !memcmp(c, "fine\n", 5));
    free(c);
    snprintf(p, sizeof(p), "%s/good/hard", dest);
    c = read_all(p, &n);
    CHECK(c && n == 5);
    free(c);
    snprintf(p, sizeof(p), "%s/good/up", dest);
    char t[64] = "";
    CHECK(readlink(p, t, sizeof(t) - 1) > 0);
    CHECK_STR(t, "../good/file.txt");
    dynbuf_free(&a);
    rm_tree(d);
}

TEST(extractor_never_writes_through_a_symlink) {
    char *d = tmpdir_new();
    if (!d) { CHECK(0); return; }
    char dest[1024], p[1200];
    snprintf(dest, sizeof(dest), "%s/dest", d);
    sh("mkdir -p '%s' '%s/outside' && echo keep > '%s/outside/victim'", dest, d, d);
    /* already on disk: a symlink to outside, and a file that is a symlink to a victim */
    sh("ln -s '%s/outside' '%s/pre' && ln -s ../outside/victim '%s/f'", d, dest, dest);
    struct dynbuf a;
    dynbuf_init(&a, 1 << 20);
    add_member(&a, "pre/planted", '0', "evil", NULL);       /* through a symlink on disk */
    add_member(&a, "inlink", '2', NULL, "sub");              /* inside: allowed */
    add_member(&a, "sub/", '5', NULL, NULL);
    add_member(&a, "inlink/planted", '0', "evil", NULL);    /* through the archive's symlink */
    add_member(&a, "f", '0', "replaced\n", NULL);           /* replaces the symlink, not the victim */
    end_archive(&a);
    struct rejects rj = {0};
    CHECK_INT(extract_bytes(a.data, a.len, dest, NULL, NULL, &rj), 0);
    CHECK_INT(rj.n, 2);
    CHECK(strstr(rj.last, "inlink/planted") != NULL);
    snprintf(p, sizeof(p), "%s/outside/planted", d); CHECK(!exists(p));
    snprintf(p, sizeof(p), "%s/sub/planted", dest); CHECK(!exists(p));
    snprintf(p, sizeof(p), "%s/outside/victim", d);
    size_t n;
    char *c = read_all(p, &n);
    CHECK(c && n == 5 && !memcmp(c, "keep\n", 5));
    free(c);
    snprintf(p, sizeof(p), "%s/f", dest);
    struct stat st;
    CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode));
    dynbuf_free(&a);
    rm_tree(d);
}

TEST(extractor_maps_the_top_member_and_rejects_others) {
    char *d = tmpdir_new();
    if (!d) { CHECK(0); return; }
    char p[1200];
    struct dynbuf a;
    dynbuf_init(&a, 1 << 20);
    add_member(&a, "data/", '5', NULL, NULL);
    add_member(&a, "data/a.txt", '0', "A", NULL);
    add_member(&a, "data/link", '1', NULL, "data/a.txt");
    add_member(&a, "database", '0', "not below data", NULL);
    add_member(&a, "other/b", '0', "B", NULL);
    end_archive(&a);
    struct rejects rj = {0};
    CHECK_INT(extract_bytes(a.data, a.len, d, "data", "copy", &rj), 0);
    CHECK_INT(rj.n, 2);
    snprintf(p, sizeof(p), "%s/copy/a.txt", d); CHECK(exists(p));
    snprintf(p, sizeof(p), "%s/copy/link", d); CHECK(exists(p));
    snprintf(p, sizeof(p), "%s/database", d); CHECK(!exists(p));
    snprintf(p, sizeof(p), "%s/other", d); CHECK(!exists(p));
    /* from "" puts everything below `to` */
    dynbuf_reset(&a);
    add_member(&a, "./", '5', NULL, NULL);
    add_member(&a, "./x", '0', "X", NULL);
    end_archive(&a);
    memset(&rj, 0, sizeof(rj));
    CHECK_INT(extract_bytes(a.data, a.len, d, "", "all", &rj), 0);
    CHECK_INT(rj.n, 0);
    snprintf(p, sizeof(p), "%s/all/x", d); CHECK(exists(p));
    dynbuf_free(&a);
    rm_tree(d);
}

TEST(extractor_reports_truncated_and_corrupt_archives) {
    char *d = tmpdir_new();
    if (!d) { CHECK(0); return; }
    struct dynbuf a;
    dynbuf_init(&a, 1 << 20);
    add_member(&a, "f", '0', "0123456789", NULL);
    struct rejects rj = {0};
    CHECK_INT(extract_bytes(a.data, 700, d, NULL, NULL, &rj), -1);   /* mid-data */
    CHECK_INT(extract_bytes(a.data, 0, d, NULL, NULL, &rj), -1);     /* nothing at all */
    CHECK_INT(extract_bytes(a.data, a.len, d, NULL, NULL, &rj), 0);  /* no end blocks: lenient */
    a.data[148] ^= 1;                                                 /* checksum */
    CHECK_INT(extract_bytes(a.data, a.len, d, NULL, NULL, &rj), -1);
    char junk[1024];
    memset(junk, 'j', sizeof(junk));
    CHECK_INT(extract_bytes(junk, sizeof(junk), d, NULL, NULL, &rj), -1);
    dynbuf_free(&a);
    rm_tree(d);
}

/* ---- archives written by GNU tar ------------------------------------------------------ */

TEST(extractor_reads_gnu_and_pax_long_names) {
    char *d = tmpdir_new();
    if (!d) { CHECK(0); return; }
    char longname[200];
    memset(longname, 'q', 180); longname[180] = '\0';
    sh("mkdir -p '%s/src/t/sub' && echo one > '%s/src/t/%s' && echo two > '%s/src/t/sub/x' && "
       "ln -s '../%s' '%s/src/t/sub/l%s' && chmod 0750 '%s/src/t/sub'",
       d, d, longname, d, longname, d, longname, d);
    const char *formats[] = {"gnu", "pax", "ustar"};
    for (int i = 0; i < 3; i++) {
        int rc = sh("tar --format=%s -cf '%s/%s.tar' -C '%s/src' t 2>/dev/null", formats[i], d, formats[i], d);
        if (i == 2) { CHECK(rc != 0); continue; }   /* ustar cannot hold the names */
        CHECK_INT(rc, 0);
        char dest[1024], arch[1024];
        snprintf(dest, sizeof(dest), "%s/x-%s", d, formats[i]);
        snprintf(arch, sizeof(arch), "%s/%s.tar", d, formats[i]);
        mkdir(dest, 0755);
        struct rejects rj = {0};
        CHECK_INT(extract_file(arch, dest, NULL, NULL, &rj), 0);
        CHECK_INT(rj.n, 0);
        CHECK_INT(sh("diff -r --no-dereference '%s/src/t' '%s/t'", d, dest), 0);
        char p[1400];
        snprintf(p, sizeof(p), "%s/t/sub", dest);
        CHECK_INT(mode_of(p), 0750);
    }
    rm_tree(d);
}

/* ---- round trip ----------------------------------------------------------------------- */

TEST(round_trip_of_a_tree_with_a_5mb_binary_and_a_unicode_name) {
    char *d = tmpdir_new();
    if (!d) { CHECK(0); return; }
    char p[1024];
    sh("mkdir -p '%s/src/proj/a/b' '%s/src/proj/empty-dir' '%s/dest'", d, d, d);
    size_t big = 5u << 20;
    unsigned char *blob = malloc(big);
    CHECK(blob != NULL);
    if (!blob) { rm_tree(d); return; }
    unsigned x = 2463534242u;
    for (size_t i = 0; i < big; i++) { x ^= x << 13; x ^= x >> 17; x ^= x << 5; blob[i] = (unsigned char)x; }
    snprintf(p, sizeof(p), "%s/src/proj/a/b/blob.bin", d);
    CHECK_INT(write_file(p, blob, big, 0600), 0);
    snprintf(p, sizeof(p), "%s/src/proj/" UNICODE_NAME, d);
    CHECK_INT(write_file(p, "unicode\n", 8, 0644), 0);
    snprintf(p, sizeof(p), "%s/src/proj/run", d);
    CHECK_INT(write_file(p, "#!/bin/sh\n", 10, 0755), 0);
    sh("ln -s 'a/b/blob.bin' '%s/src/proj/blob-link' && chmod 0555 '%s/src/proj/a'", d, d);

    char err[256];
    snprintf(p, sizeof(p), "%s/src/proj", d);
    struct cli_tar_src *s = cli_tar_src_new(p, "proj", NULL, NULL, err, sizeof(err));
    CHECK(s != NULL);
    if (s) {
        /* pull straight into the extractor: no file in between */
        char dest[1024];
        snprintf(dest, sizeof(dest), "%s/dest", d);
        struct rejects rj = {0};
        struct cli_untar_options o = {.dest_dir = dest, .from = "proj", .to = "copy",
                                      .on_reject = on_reject, .ud = &rj};
        struct cli_untar *u = cli_untar_new(&o, err, sizeof(err));
        CHECK(u != NULL);
        char buf[33000];
        ssize_t r;
        size_t total = 0, cap = 100;
        while ((r = cli_tar_src_read(s, buf, cap)) > 0) {
            total += (size_t)r;
            CHECK_INT(cli_untar_feed(u, buf, (size_t)r), 0);
            cap = cap * 7 % 32999 + 1;
        }
        CHECK_INT(r, 0);
        CHECK(total > big);
        CHECK_INT(cli_untar_finish(u), 0);
        CHECK_INT(cli_untar_rejected(u), 0);
        CHECK_INT(cli_untar_entries(u), 8);   /* proj a b blob empty-dir unicode run link */
        cli_untar_free(u);
        cli_tar_src_free(s);
        CHECK_INT(sh("diff -r --no-dereference '%s/src/proj' '%s/dest/copy'", d, d), 0);
        snprintf(p, sizeof(p), "%s/dest/copy/a/b/blob.bin", d);
        size_t n = 0;
        char *c = read_all(p, &n);
        CHECK(c && n == big && !memcmp(c, blob, big));
        free(c);
        CHECK_INT(mode_of(p), 0600);
        snprintf(p, sizeof(p), "%s/dest/copy/a", d);
        CHECK_INT(mode_of(p), 0555);
        snprintf(p, sizeof(p), "%s/dest/copy/run", d);
        CHECK_INT(mode_of(p), 0755);
        snprintf(p, sizeof(p), "%s/dest/copy/" UNICODE_NAME, d);
        CHECK(exists(p));
    }
    free(blob);
    rm_tree(d);
}
