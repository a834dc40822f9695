/* cli/cmd_cp.c — `cp LOCAL SANDBOX:PATH` and `cp SANDBOX:PATH LOCAL`: a tar stream built
 * here and unpacked by tar in the sandbox, or tar in the sandbox and the safe extractor
 * here (cli/tar_write.c, cli/tar_read.c). Known limit: needs tar in the image. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errfmt.h"
#include "cli/cli.h"
#include "cli/cluster.h"
#include "cli/paths.h"
#include "cli/remote.h"
#include "cli/tar.h"
#include "cli/session.h"
#include "base/dynbuf.h"
#include "kube/kjson.h"

/* "SANDBOX:PATH" → name (DNS subdomain before the first ':') and path. 1 if remote. */
static int split_remote(const char *arg, char *name, size_t namelen, const char **path) {
    const char *colon = strchr(arg, ':');
    if (!colon || colon == arg || (size_t)(colon - arg) >= namelen) return 0;
    memcpy(name, arg, (size_t)(colon - arg));
    name[colon - arg] = '\0';
    if (!cluster_valid_name(name)) return 0;
    *path = colon + 1;
    return 1;
}

/* The name a local path is stored under: its base name ("." and ".." resolved). */
static char *local_base(const char *path) {
    char *dir, *name;
    if (cli_path_split(path, &dir, &name) < 0) return NULL;
    free(dir);
    if (strcmp(name, ".") && strcmp(name, "/")) return name;
    free(name);
    char *real = realpath(path, NULL);
    if (!real) return NULL;
    if (cli_path_split(real, &dir, &name) < 0) { free(real); return NULL; }
    free(real);
    free(dir);
    if (!strcmp(name, ".")) { free(name); return NULL; }   /* "/" */
    return name;
}

/* Notes from the tar writer/extractor: one stderr line each, prefixed with ud. */
static void note_stderr(void *ud, const char *msg) {
    const char *what = ud;
    fprintf(stderr, PROG ": %s: %s\n", what, msg);
}

/* cp LOCAL SANDBOX:PATH — a tar stream built locally, unpacked by tar in the sandbox. */
static int cp_in(struct cli *c, const char *local, const char *rpath) {
    struct stat st;
    if (stat(local, &st) < 0) return cli_fail("cp: %s: %s", local, strerror(errno));
    char pod[256], *file;
    if (session_file_setup(c, rpath, pod, sizeof(pod), &file)) return 1;
    char *lbase = local_base(local), *rdir = NULL, *rname = NULL;
    int rc = 0, code = 0;
    if (!lbase) { rc = cli_fail("cp: cannot copy \"%s\"", local); goto out; }
    /* Before anything is sent: tar is there, and either PATH is a directory (the source
     * goes inside under its own name) or its parent is (PATH names the copy). */
    if (cli_path_split(file, &rdir, &rname) < 0) { rc = cli_fail(ERR_OOM); goto out; }
    const char *check[] = {"sh", "-c", CLI_CP_IN_CHECK, "sh", file, rdir};
    struct dynbuf what, cerr;
    dynbuf_init(&what, 64);
    dynbuf_init(&cerr, STDERR_KEEP);
    struct session_io cx = {.out_fd = -1, .out_buf = &what, .err_fd = -1, .err_buf = &cerr, .in_fd = -1};
    rc = session_file_op(c, pod, check, 6, &cx, 0, &code);
    int into_dir = rc == 0 && code == 0 && what.len >= 3 && !memcmp(what.data, "dir", 3);
    /* "DIR/" (or "DIR/.") asks for a directory: never a new file named DIR */
    size_t rl = strlen(rpath);
    int wants_dir = !strcmp(rname, ".") || (rl && rpath[rl - 1] == '/');
    int new_name = rc == 0 && code == 0 && what.len >= 3 && !memcmp(what.data, "new", 3) && !wants_dir;
    if (rc == 0 && ((code == 1 && wants_dir) || (code == 0 && !into_dir && !new_name)))
        rc = cli_fail("cp: %s: no such directory in the sandbox", file);   /* DIR/ as asked */
    else if (rc == 0 && code != 0) rc = session_failed(&cerr, code);
    dynbuf_free(&what);
    dynbuf_free(&cerr);
    if (rc) goto out;
    if (into_dir) {
        free(rdir);
        free(rname);
        rdir = strdup(file);
        rname = strdup(lbase);
        if (!rdir || !rname) { rc = cli_fail(ERR_OOM); goto out; }
    }
    char err[512];
    struct cli_tar_src *src = cli_tar_src_new(local, rname, note_stderr, "cp", err, sizeof(err));
    if (!src) { rc = cli_fail("cp: %s", err); goto out; }
    const char *untar[] = {"sh", "-c", CLI_STDIN_CHILD, "sh", "tar", "-xmf", "-", "-C", rdir};
    struct dynbuf errb;
    dynbuf_init(&errb, STDERR_KEEP);
    struct session_io x = {.out_fd = 2, .err_fd = -1, .err_buf = &errb, .in_fd = -1, .tar = src};
    rc = session_file_op(c, pod, untar, 9, &x, 1, &code);
    if (rc == 0 && code != 0) rc = session_failed(&errb, code);
    dynbuf_free(&errb);
    cli_tar_src_free(src);
out:
    free(lbase);
    free(rdir);
    free(rname);
    free(file);
    return rc;
}

/* cp SANDBOX:PATH LOCAL — tar in the sandbox, the safe extractor here. */
static int cp_out(struct cli *c, const char *rpath, const char *local) {
    char pod[256], *file, *rdir = NULL, *rname = NULL, *ldir = NULL, *lname = NULL;
    if (session_file_setup(c, rpath, pod, sizeof(pod), &file)) return 1;
    int rc = 0, code = 0;
    if (cli_path_split(file, &rdir, &rname) < 0) { rc = cli_fail(ERR_OOM); goto out; }
    struct stat st;
    const char *dest, *to;
    const char *from = strcmp(rname, ".") ? rname : "";
    if (stat(local, &st) == 0 && S_ISDIR(st.st_mode)) {
        dest = local;
        to = from;
    } else {
        if (cli_path_split(local, &ldir, &lname) < 0) { rc = cli_fail("cp: invalid destination \"%s\"", local); goto out; }
        if (!strcmp(lname, ".")) { rc = cli_fail("cp: %s: no such directory", local); goto out; }
        dest = ldir;
        to = lname;
    }
    char member[PATH_MAX + 3];
    snprintf(member, sizeof(member), "%s%s", rname[0] == '-' ? "./" : "", rname);
    char err[512];
    struct cli_untar_options uo = {.dest_dir = dest, .from = from, .to = to, .on_reject = note_stderr, .ud = "cp"};
    struct cli_untar *u = cli_untar_new(&uo, err, sizeof(err));
    if (!u) { rc = cli_fail("cp: %s", err); goto out; }
    const char *mktar[] = {"sh", "-c", CLI_CP_OUT_SCRIPT, "sh", rdir, member, file};
    struct dynbuf errb;
    dynbuf_init(&errb, STDERR_KEEP);
    struct session_io x = {.untar = u, .err_fd = -1, .err_buf = &errb, .in_fd = -1};
    rc = session_file_op(c, pod, mktar, 7, &x, 0, &code);
    if (rc == 0 && code >= 2) rc = session_failed(&errb, code);
    else if (rc == 0 && code == 1) {           /* GNU tar: some files changed while read */
        char msg[1024];
        session_remote_message(&errb, msg, sizeof(msg));
        fprintf(stderr, PROG ": cp: warning: %s\n", msg[0] ? msg : "tar reported changed files");
    }
    if (rc == 0 && cli_untar_finish(u) < 0) rc = cli_fail("cp: %s", cli_untar_error(u));
    if (rc == 0 && cli_untar_rejected(u) > 0)
        rc = cli_fail("cp: %zu unsafe archive entr%s rejected", cli_untar_rejected(u),
                  cli_untar_rejected(u) == 1 ? "y" : "ies");
    dynbuf_free(&errb);
    cli_untar_free(u);
out:
    free(rdir);
    free(rname);
    free(ldir);
    free(lname);
    free(file);
    return rc;
}

/* cp SRC DST: exactly one side is SANDBOX:PATH. */
int cmd_cp(struct cli *c) {
    struct args *a = c->a;
    char n1[254], n2[254];
    const char *p1, *p2;
    int r1 = split_remote(a->pos[0], n1, sizeof(n1), &p1), r2 = split_remote(a->pos[1], n2, sizeof(n2), &p2);
    if (r1 && r2) return cli_usage_error("copying from one sandbox to another is not supported");
    if (!r1 && !r2) return cli_usage_error("one of SRC and DST must be SANDBOX:PATH (write ./NAME for a local path with ':')");
    if (r1) { a->pos[0] = n1; return cp_out(c, p1, a->pos[1]); }
    const char *local = a->pos[0];
    a->pos[0] = n2;
    return cp_in(c, local, p2);
}
