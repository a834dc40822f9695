/* tests/unit/test_cli_remote.c — the scripts the CLI runs in a sandbox, run here for real,
 * exactly as the CLI sends them (sh -c SCRIPT sh ARGS...), twice: with the machine's sh
 * and GNU tools, and with busybox alone (busybox sh, PATH = a directory of links to every
 * applet `busybox --list` names, as in a busybox-based image). The listing behind ls and
 * stat must give the same entries in both (names with spaces, quotes, newlines, unicode,
 * a leading dash; hidden files; symlinks, broken ones, a target ending in newlines;
 * directories, fifos), name a missing path, say when stat or tar is missing; cp's checks
 * must tell a directory from a new name and name a missing directory before anything is
 * sent. Also the one-line message of a failed remote command, from GNU and busybox
 * wording. Needs busybox (apt-get install busybox): without it the busybox half fails. */
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
#include "cli/listing.h"
#include "cli/remote.h"

#define UNICODE_NAME "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93.txt"   /* "héllo wörld ✓.txt" */

/* ---- running a script ------------------------------------------------------------------- */

/* The environment a script runs in: a shell and a PATH. */
struct env {
    const char *name;
    char shell[512];     /* the sh to run */
    char path[512];      /* PATH */
};

struct run {
    int code;            /* exit status, -1 when it did not exit normally */
    struct dynbuf out, err;
};

static void run_free(struct run *r) {
    dynbuf_free(&r->out);
    dynbuf_free(&r->err);
}

/* Read all of fd into b. */
static void slurp(int fd, struct dynbuf *b) {
    char buf[65536];
    ssize_t n;
    lseek(fd, 0, SEEK_SET);
    while ((n = read(fd, buf, sizeof(buf))) > 0) dynbuf_append(b, buf, (size_t)n);
}

/* sh -c script sh args... in dir (NULL: here), with only PATH set. */
static void run_script(const struct env *e, const char *dir, const char *script, const char *const *args,
                       size_t nargs, struct run *r) {
    memset(r, 0, sizeof(*r));
    r->code = -1;
    dynbuf_init(&r->out, 64u << 20);
    dynbuf_init(&r->err, 1u << 20);
    FILE *o = tmpfile(), *er = tmpfile();
    if (!o || !er) {
        if (o) fclose(o);
        if (er) fclose(er);
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        const char *argv[16];
        size_t k = 0;
        argv[k++] = "sh";
        argv[k++] = "-c";
        argv[k++] = script;
        argv[k++] = "sh";
        for (size_t i = 0; i < nargs && k < 15; i++) argv[k++] = args[i];
        argv[k] = NULL;
        char pathvar[600];
        snprintf(pathvar, sizeof(pathvar), "PATH=%s", e->path);
        char *const envp[] = {pathvar, "LC_ALL=C.UTF-8", NULL};
        dup2(fileno(o), 1);
        dup2(fileno(er), 2);
        if (dir && chdir(dir) < 0) _exit(126);
        execve(e->shell, (char *const *)argv, envp);
        _exit(127);
    }
    int st;
    if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st)) r->code = WEXITSTATUS(st);
    slurp(fileno(o), &r->out);
    slurp(fileno(er), &r->err);
    fclose(o);
    fclose(er);
}

static const char *text(struct dynbuf *b) {
    if (dynbuf_append(b, "", 1) < 0) return "";
    b->len--;
    return b->data;
}

/* ---- the two environments ----------------------------------------------------------------- */

static char *tmpdir_new(void) {
    const char *t = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof(tmpl), "%s/yao-cli-remote-XXXXXX", t && *t ? t : "/tmp");
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

static void rm_tree(const char *d) {
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", d, d);
    if (system(cmd) != 0) fprintf(stderr, "  cannot remove %s\n", d);
}

/* busybox on PATH, else "". */
static void find_busybox(char *out, size_t n) {
    static const char *const dirs[] = {"/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"};
    out[0] = '\0';
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        char p[256];
        snprintf(p, sizeof(p), "%s/busybox", dirs[i]);
        if (access(p, X_OK) == 0) {
            snprintf(out, n, "%s", p);
            return;
        }
    }
}

/* A directory holding a link to busybox for each applet it has. 0, or -1 without
 * busybox. */
static int busybox_env(struct env *e, const char *dir) {
    char bb[256], cmd[600];
    find_busybox(bb, sizeof(bb));
    if (!bb[0]) {
        fprintf(stderr, "  busybox is not installed (apt-get install busybox): the busybox half cannot run\n");
        return -1;
    }
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) return -1;
    snprintf(cmd, sizeof(cmd), "%s --list", bb);
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    char applet[128];
    int links = 0;
    while (fgets(applet, sizeof(applet), f)) {
        applet[strcspn(applet, "\n")] = '\0';
        if (!applet[0]) continue;
        char l[700];
        snprintf(l, sizeof(l), "%s/%s", dir, applet);
        if (symlink(bb, l) == 0) links++;
    }
    pclose(f);
    e->name = "busybox";
    snprintf(e->shell, sizeof(e->shell), "%s/sh", dir);
    snprintf(e->path, sizeof(e->path), "%s", dir);
    return links > 50 ? 0 : -1;
}

static void gnu_env(struct env *e) {
    e->name = "sh + GNU";
    snprintf(e->shell, sizeof(e->shell), "/bin/sh");
    snprintf(e->path, sizeof(e->path), "/usr/local/bin:/usr/bin:/bin");
}

/* A tree with every awkward name: returns the directory "d" below base. */
static void make_tree(const char *base) {
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "set -e; cd '%s'; mkdir d; cd d; printf 12345 > 'a b'; touch \"$(printf 'new\\nline')\" "
             "\"q'uote\\\"dq\" '" UNICODE_NAME "' ./-dash .hidden ..dotdot '*'; chmod 640 'a b'; "
             "ln -s 'a b' link; ln -s /nonexistent broken; "
             "mkdir sub; chmod 750 sub; mkfifo fifo; touch -d @1700000000 'a b'; ln -s sub linkdir",
             base);
    CHECK_INT(system(cmd), 0);
    char nl[600];
    snprintf(nl, sizeof(nl), "%s/d/nltarget", base);
    CHECK_INT(symlink("tgt\n\n", nl), 0);      /* a target ending in newlines */
}

struct want {
    const char *name;
    char type;
    unsigned mode;
    long long size;          /* -1: any */
    const char *link;
};

static const struct want TREE[] = {
    {"*", 'f', 0, 0, ""},
    {"-dash", 'f', 0, 0, ""},
    {"..dotdot", 'f', 0, 0, ""},
    {".hidden", 'f', 0, 0, ""},
    {"a b", 'f', 0640, 5, ""},
    {"broken", 'l', 0777, -1, "/nonexistent"},
    {"fifo", 'p', 0, 0, ""},
    {UNICODE_NAME, 'f', 0, 0, ""},
    {"link", 'l', 0777, -1, "a b"},
    {"linkdir", 'l', 0777, -1, "sub"},
    {"new\nline", 'f', 0, 0, ""},
    {"nltarget", 'l', 0777, -1, "tgt\n\n"},
    {"q'uote\"dq", 'f', 0, 0, ""},
    {"sub", 'd', 0750, -1, ""},
};

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const struct cli_file_info *)a)->name, ((const struct cli_file_info *)b)->name);
}

/* ls of the tree: the directory first, then exactly TREE (sorted here). */
static void check_ls(const struct env *e, const char *base) {
    const char *args[] = {"ls", "d"};
    struct run r;
    run_script(e, base, CLI_LIST_SCRIPT, args, 2, &r);
    CHECK_INT(r.code, 0);
    if (r.code) fprintf(stderr, "  %s: %s\n", e->name, text(&r.err));
    struct cli_file_info *v = NULL;
    size_t n = 0;
    CHECK_INT(cli_listing_parse(r.out.data, r.out.len, &v, &n), 0);
    size_t want_n = sizeof(TREE) / sizeof(TREE[0]);
    CHECK_INT(n, want_n + 1);
    if (n == want_n + 1) {
        CHECK_STR(v[0].name, "d");
        CHECK_INT(v[0].type, 'd');
        qsort(v + 1, n - 1, sizeof(*v), cmp_name);
        for (size_t i = 0; i < want_n; i++) {
            const struct cli_file_info *f = &v[i + 1];
            const struct want *w = &TREE[i];
            CHECK_STR(f->name, w->name);
            CHECK_INT(f->type, w->type);
            if (w->mode) CHECK_INT(f->mode, w->mode);
            if (w->size >= 0) CHECK_INT(f->size, w->size);
            CHECK_STR(f->link, w->link);
            if (f->type != w->type) fprintf(stderr, "  %s: entry \"%s\"\n", e->name, w->name);
        }
        CHECK_INT(v[5].mtime_ms, 1700000000000LL);   /* "a b" */
    }
    cli_file_infos_free(v, n);
    run_free(&r);
}

/* stat of single paths: a file, a symlink (not followed), a directory, the root. */
static void check_stat(const struct env *e, const char *base) {
    static const struct { const char *path; const char *name; char type; const char *link; } cases[] = {
        {"d/a b", "a b", 'f', ""}, {"d/link", "link", 'l', "a b"}, {"d/sub/", "sub", 'd', ""},
        {"d/" UNICODE_NAME, UNICODE_NAME, 'f', ""}, {"/", "/", 'd', ""}, {"d/-dash", "-dash", 'f', ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[] = {"stat", cases[i].path};
        struct run r;
        run_script(e, base, CLI_LIST_SCRIPT, args, 2, &r);
        CHECK_INT(r.code, 0);
        struct cli_file_info *v = NULL;
        size_t n = 0;
        CHECK_INT(cli_listing_parse(r.out.data, r.out.len, &v, &n), 0);
        CHECK_INT(n, 1);
        if (n == 1) {
            CHECK_STR(v[0].name, cases[i].name);
            CHECK_INT(v[0].type, cases[i].type);
            CHECK_STR(v[0].link, cases[i].link);
        }
        cli_file_infos_free(v, n);
        run_free(&r);
    }
    /* ls of a file is that file; ls of a link to a directory lists the directory */
    const char *ls_file[] = {"ls", "d/a b"}, *ls_link[] = {"ls", "d/linkdir"};
    struct run r;
    struct cli_file_info *v = NULL;
    size_t n = 0;
    run_script(e, base, CLI_LIST_SCRIPT, ls_file, 2, &r);
    CHECK_INT(cli_listing_parse(r.out.data, r.out.len, &v, &n), 0);
    CHECK(n == 1 && v[0].type == 'f' && v[0].size == 5);
    cli_file_infos_free(v, n);
    run_free(&r);
    char sub[600];
    snprintf(sub, sizeof(sub), "%s/d/sub/inner", base);
    CHECK_INT(mkdir(sub, 0700), 0);
    run_script(e, base, CLI_LIST_SCRIPT, ls_link, 2, &r);
    CHECK_INT(cli_listing_parse(r.out.data, r.out.len, &v, &n), 0);
    CHECK(n == 2 && v[0].type == 'd' && !strcmp(v[1].name, "inner") && v[1].mode == 0700);
    cli_file_infos_free(v, n);
    run_free(&r);
    rmdir(sub);
}

/* Errors: a missing path is named in one line (exit 1); an empty directory lists as
 * itself alone. */
static void check_errors(const struct env *e, const char *base) {
    const char *missing[] = {"stat", "d/no such"};
    struct run r;
    run_script(e, base, CLI_LIST_SCRIPT, missing, 2, &r);
    CHECK_INT(r.code, 1);
    CHECK_STR(text(&r.err), "d/no such: No such file or directory\n");
    CHECK_INT(r.out.len, 0);
    run_free(&r);
    char empty[600];
    snprintf(empty, sizeof(empty), "%s/empty", base);
    CHECK_INT(mkdir(empty, 0755), 0);
    const char *ls_empty[] = {"ls", "empty"};
    run_script(e, base, CLI_LIST_SCRIPT, ls_empty, 2, &r);
    CHECK_INT(r.code, 0);
    struct cli_file_info *v = NULL;
    size_t n = 0;
    CHECK_INT(cli_listing_parse(r.out.data, r.out.len, &v, &n), 0);
    CHECK(n == 1 && v[0].type == 'd');
    cli_file_infos_free(v, n);
    run_free(&r);
    rmdir(empty);
}

TEST(listing_script_under_sh_and_gnu_tools) {
    char *base = tmpdir_new();
    if (!base) { CHECK(base != NULL); return; }
    make_tree(base);
    struct env e;
    gnu_env(&e);
    check_ls(&e, base);
    check_stat(&e, base);
    check_errors(&e, base);
    rm_tree(base);
    free(base);
}

TEST(listing_script_under_busybox_alone) {
    char *base = tmpdir_new();
    if (!base) { CHECK(base != NULL); return; }
    char bbdir[600];
    snprintf(bbdir, sizeof(bbdir), "%s/bb", base);
    struct env e;
    int have = busybox_env(&e, bbdir) == 0;
    CHECK(have);
    if (have) {
        /* the environment really is busybox's: GNU find's -printf, which the CLI used
         * before, fails here */
        const char *args[] = {"."};
        struct run r;
        run_script(&e, base, "find \"$1\" -maxdepth 0 -printf '%y'", args, 1, &r);
        CHECK(r.code != 0);
        CHECK(strstr(text(&r.err), "printf") != NULL);
        run_free(&r);
        make_tree(base);
        check_ls(&e, base);
        check_stat(&e, base);
        check_errors(&e, base);
    }
    rm_tree(base);
    free(base);
}

/* Both environments list the same tree byte for byte. */
TEST(listing_script_gives_the_same_bytes_under_both) {
    char *base = tmpdir_new();
    if (!base) { CHECK(base != NULL); return; }
    char bbdir[600];
    snprintf(bbdir, sizeof(bbdir), "%s/bb", base);
    struct env g, b;
    gnu_env(&g);
    int have = busybox_env(&b, bbdir) == 0;
    CHECK(have);
    make_tree(base);
    if (have) {
        const char *args[] = {"ls", "d"};
        struct run rg, rb;
        run_script(&g, base, CLI_LIST_SCRIPT, args, 2, &rg);
        run_script(&b, base, CLI_LIST_SCRIPT, args, 2, &rb);
        CHECK(rg.out.len > 0 && rg.out.len == rb.out.len && !memcmp(rg.out.data, rb.out.data, rg.out.len));
        run_free(&rg);
        run_free(&rb);
    }
    rm_tree(base);
    free(base);
}

/* Without stat or tar (an image that has a shell and little else: the machine's sh with
 * an empty PATH): the clear message, exit 127. And a busybox whose sh runs applets
 * without their links (busybox-static) but has no tar link: cp in runs tar without a
 * shell, so that tar does not count. */
TEST(scripts_name_a_missing_tool) {
    char *base = tmpdir_new();
    if (!base) { CHECK(base != NULL); return; }
    struct env e1, e2;
    gnu_env(&e1);
    snprintf(e1.path, sizeof(e1.path), "%s", base);          /* nothing in it */
    e1.name = "sh alone";
    e2 = e1;
    {
        const char *args[] = {"ls", "."};
        struct run r;
        run_script(&e1, base, CLI_LIST_SCRIPT, args, 2, &r);
        CHECK_INT(r.code, 127);
        CHECK_STR(text(&r.err), "stat is not available in the sandbox image\n");
        run_free(&r);
        const char *in_args[] = {".", "."};
        run_script(&e2, base, CLI_CP_IN_CHECK, in_args, 2, &r);
        CHECK_INT(r.code, 127);
        CHECK_STR(text(&r.err), "tar is not available in the sandbox image\n");
        CHECK_INT(r.out.len, 0);
        run_free(&r);
        const char *out_args[] = {".", ".", "."};
        run_script(&e2, base, CLI_CP_OUT_SCRIPT, out_args, 3, &r);
        CHECK_INT(r.code, 127);
        CHECK_STR(text(&r.err), "tar is not available in the sandbox image\n");
        run_free(&r);
    }
    char bbdir[600], tarlink[700];
    snprintf(bbdir, sizeof(bbdir), "%s/bb", base);
    struct env b;
    int have = busybox_env(&b, bbdir) == 0;
    CHECK(have);
    snprintf(tarlink, sizeof(tarlink), "%s/tar", bbdir);
    if (have && unlink(tarlink) == 0) {
        const char *in_args[] = {".", "."};
        struct run r;
        run_script(&b, base, CLI_CP_IN_CHECK, in_args, 2, &r);
        CHECK_INT(r.code, 127);
        CHECK_STR(text(&r.err), "tar is not available in the sandbox image\n");
        run_free(&r);
    }
    rm_tree(base);
    free(base);
}

/* cp's check before sending: "dir" for a directory, "new" when only the parent exists,
 * else the missing directory named; cp out: the tar stream, or the missing source named. */
static void check_cp(const struct env *e, const char *base) {
    static const struct { const char *dest, *parent; int code; const char *out, *err; } cases[] = {
        {"d", ".", 0, "dir\n", ""},
        {"d/new name", "d", 0, "new\n", ""},
        {"d/a b", "d", 0, "new\n", ""},                 /* a file: replaced by the copy */
        {"no dir/x", "no dir", 1, "", "no dir: no such directory in the sandbox\n"},
        {"d/a b/x", "d/a b", 1, "", "d/a b: no such directory in the sandbox\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[] = {cases[i].dest, cases[i].parent};
        struct run r;
        run_script(e, base, CLI_CP_IN_CHECK, args, 2, &r);
        CHECK_INT(r.code, cases[i].code);
        CHECK_STR(text(&r.out), cases[i].out);
        CHECK_STR(text(&r.err), cases[i].err);
        run_free(&r);
    }
    const char *out_args[] = {"d", "a b", "/w/d/a b"};
    struct run r;
    run_script(e, base, CLI_CP_OUT_SCRIPT, out_args, 3, &r);
    CHECK_INT(r.code, 0);
    CHECK(r.out.len >= 1024 && !memcmp(r.out.data, "a b", 3));   /* a tar header names it */
    run_free(&r);
    const char *missing[] = {"d", "nope", "/w/d/nope"};
    run_script(e, base, CLI_CP_OUT_SCRIPT, missing, 3, &r);
    CHECK_INT(r.code, 2);
    CHECK_STR(text(&r.err), "/w/d/nope: no such file or directory in the sandbox\n");
    CHECK_INT(r.out.len, 0);
    run_free(&r);
}

TEST(cp_scripts_under_sh_and_busybox) {
    char *base = tmpdir_new();
    if (!base) { CHECK(base != NULL); return; }
    make_tree(base);
    struct env g, b;
    gnu_env(&g);
    check_cp(&g, base);
    char bbdir[600];
    snprintf(bbdir, sizeof(bbdir), "%s/bb", base);
    int have = busybox_env(&b, bbdir) == 0;
    CHECK(have);
    if (have) check_cp(&b, base);
    rm_tree(base);
    free(base);
}

/* ---- the one-line message of a failed remote command ------------------------------------- */

TEST(remote_message_is_the_first_meaningful_line) {
    static const char *const cases[][2] = {
        /* GNU tar into a missing directory: the cause, not the summary after it */
        {"tar: /w/missing: Cannot open: No such file or directory\n"
         "tar: Error is not recoverable: exiting now\n",
         "/w/missing: Cannot open: No such file or directory"},
        {"tar: x: Cannot open: Permission denied\ntar: Exiting with failure status due to previous errors\n",
         "x: Cannot open: Permission denied"},
        /* busybox tar */
        {"tar: can't change directory to '/w/missing': No such file or directory\n",
         "can't change directory to '/w/missing': No such file or directory"},
        /* dash and busybox sh */
        {"sh: 1: cannot create /w/f: Directory nonexistent\n", "cannot create /w/f: Directory nonexistent"},
        {"sh: can't create /w/f: nonexistent directory\n", "can't create /w/f: nonexistent directory"},
        {"cat: /w/x: No such file or directory\n", "/w/x: No such file or directory"},
        {"\n  \n\tmkdir: cannot create directory '/w/a': File exists\r\n", "cannot create directory '/w/a': File exists"},
        {"plain words without a prefix", "plain words without a prefix"},
        /* the scripts' own lines start with the path: it stays */
        {"cliw/nope: No such file or directory\n", "cliw/nope: No such file or directory"},
        {"nope: No such file or directory\n", "nope: No such file or directory"},
        {"no dir: no such directory in the sandbox\n", "no dir: no such directory in the sandbox"},
        {"3: not a program\n", "3: not a program"},
        {"tar: Error is not recoverable: exiting now\n", ""},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[256];
        cli_remote_message(cases[i][0], strlen(cases[i][0]), out, sizeof(out));
        CHECK_STR(out, cases[i][1]);
    }
    char tiny[8];
    cli_remote_message("tar: abcdefghijkl\n", 18, tiny, sizeof(tiny));
    CHECK_STR(tiny, "abcdefg");
}

/* What tar itself says, run for real: the first line names the missing directory. */
TEST(remote_message_of_real_tar_failures) {
    char *base = tmpdir_new();
    if (!base) { CHECK(base != NULL); return; }
    struct env g, b;
    gnu_env(&g);
    char bbdir[600];
    snprintf(bbdir, sizeof(bbdir), "%s/bb", base);
    int have = busybox_env(&b, bbdir) == 0;
    CHECK(have);
    for (int k = 0; k < 1 + have; k++) {
        const struct env *e = k ? &b : &g;
        const char *args[] = {"/nonexistent/dir"};
        struct run r;
        run_script(e, base, "tar -cf - -C /etc hostname | tar -xmf - -C \"$1\"", args, 1, &r);
        CHECK(r.code != 0);
        char msg[512];
        cli_remote_message(r.err.data, r.err.len, msg, sizeof(msg));
        CHECK(strstr(msg, "/nonexistent/dir") != NULL);
        if (!strstr(msg, "/nonexistent/dir")) fprintf(stderr, "  %s: \"%s\"\n", e->name, msg);
        run_free(&r);
    }
    rm_tree(base);
    free(base);
}
