/* cli/cmd_files.c — the file helpers that mirror the Yao sandbox Manager: read, write,
 * ls, stat, mkdir, rm, each a command run in the sandbox's container (cat, the portable
 * listing script, mkdir, rm) as kubectl cp does.
 *
 * Known limit: they need sh, cat, mkdir, rm, stat and readlink (ls, stat) in the image:
 * GNU coreutils or busybox both do (see CLI_LIST_SCRIPT). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "cli/listing.h"
#include "cli/paths.h"
#include "cli/remote.h"
#include "cli/output.h"
#include "cli/session.h"
#include "base/dynbuf.h"
#include "kube/kjson.h"

/* read SANDBOX PATH: cat in the sandbox, bytes to our stdout. */
int cmd_read(struct cli *c) {
    char pod[256], *file;
    if (session_file_setup(c, c->a->pos[1], pod, sizeof(pod), &file)) return 1;
    const char *argv[] = {"cat", "--", file};
    struct dynbuf errb;
    dynbuf_init(&errb, STDERR_KEEP);
    struct session_io x = {.out_fd = 1, .err_fd = -1, .err_buf = &errb, .in_fd = -1};
    int code = -1, rc = session_file_op(c, pod, argv, 3, &x, 0, &code);
    if (rc == 0 && code != 0) rc = session_failed(&errb, code);
    if (x.broken_pipe) rc = 141;
    dynbuf_free(&errb);
    free(file);
    return rc;
}

/* write SANDBOX PATH [-p]: our stdin to `cat > PATH` in the sandbox (a child of the shell:
 * see CLI_STDIN_CHILD). */
int cmd_write(struct cli *c) {
    char pod[256], *file;
    if (session_file_setup(c, c->a->pos[1], pod, sizeof(pod), &file)) return 1;
    const char *plain[] = {"sh", "-c", "cat > \"$1\"; exit $?", "sh", file};
    const char *mkp[] = {"sh", "-c", "mkdir -p -- \"$(dirname -- \"$1\")\" && cat > \"$1\"; exit $?", "sh", file};
    struct dynbuf errb;
    dynbuf_init(&errb, STDERR_KEEP);
    struct session_io x = {.out_fd = 2, .err_fd = -1, .err_buf = &errb, .in_fd = 0};
    int code = -1, rc = session_file_op(c, pod, c->a->parents ? mkp : plain, 5, &x, 1, &code);
    if (rc == 0 && code != 0) rc = session_failed(&errb, code);
    dynbuf_free(&errb);
    free(file);
    return rc;
}

/* Readable name of a file type letter. */
static const char *type_name(char t) {
    switch (t) {
    case 'f': return "file";
    case 'd': return "directory";
    case 'l': return "symlink";
    case 'p': return "fifo";
    case 's': return "socket";
    case 'c': return "char-device";
    case 'b': return "block-device";
    default: return "unknown";
    }
}

/* A FileInfo object, as the Yao sandbox Manager returns it. */
static cJSON *info_json(const struct cli_file_info *fi, const char *path) {
    char mode[12], mt[40], oct[8];
    cJSON *o = cJSON_CreateObject();
    cli_mode_string(fi->type, fi->mode, mode);
    kj_time_format(fi->mtime_ms, mt, sizeof(mt));
    snprintf(oct, sizeof(oct), "%04o", fi->mode);
    cJSON_AddStringToObject(o, "name", fi->name);
    cJSON_AddStringToObject(o, "path", path);
    cJSON_AddNumberToObject(o, "size", (double)fi->size);
    cJSON_AddStringToObject(o, "mode", oct);
    cJSON_AddStringToObject(o, "modeString", mode);
    cJSON_AddStringToObject(o, "modTime", mt);
    cJSON_AddBoolToObject(o, "isDir", fi->type == 'd');
    cJSON_AddStringToObject(o, "type", type_name(fi->type));
    if (fi->type == 'l') cJSON_AddStringToObject(o, "linkTarget", fi->link);
    return o;
}

/* qsort comparator: by name. */
static int cmp_info(const void *a, const void *b) {
    return strcmp(((const struct cli_file_info *)a)->name, ((const struct cli_file_info *)b)->name);
}

/* Run the listing for ls (the path and its entries) or stat (the path alone). 0 with the
 * entries, the path's own first, or 1. */
static int find_listing(struct cli *c, const char *pod, const char *file, int ls,
                        struct cli_file_info **v, size_t *n) {
    const char *argv[] = {"sh", "-c", CLI_LIST_SCRIPT, "sh", ls ? "ls" : "stat", file};
    struct dynbuf out, errb;
    dynbuf_init(&out, CAPTURE_MAX);
    dynbuf_init(&errb, STDERR_KEEP);
    struct session_io x = {.out_fd = -1, .out_buf = &out, .err_fd = -1, .err_buf = &errb, .in_fd = -1};
    int code = -1, rc = session_file_op(c, pod, argv, 6, &x, 0, &code);
    if (rc == 0 && code != 0) rc = session_failed(&errb, code);
    if (rc == 0 && (cli_listing_parse(out.data, out.len, v, n) < 0 || *n == 0))
        rc = cli_fail("%s: unexpected output from the listing in the sandbox", cli_current->name);
    dynbuf_free(&out);
    dynbuf_free(&errb);
    return rc;
}

/* ls SANDBOX [PATH] [-l] [-o json]: a directory's entries (or the file itself). */
int cmd_ls(struct cli *c) {
    struct args *a = c->a;
    if (out_check_format(a->output, "json")) return 2;
    char pod[256], *file;
    if (session_file_setup(c, a->npos > 1 ? a->pos[1] : "", pod, sizeof(pod), &file)) return 1;
    struct cli_file_info *v = NULL;
    size_t n = 0;
    int rc = find_listing(c, pod, file, 1, &v, &n);
    if (rc == 0) {
        size_t start = 0;
        int is_dir = n > 0 && v[0].type == 'd';
        if (is_dir) start = 1;   /* the directory itself */
        if (n > start) qsort(v + start, n - start, sizeof(*v), cmp_info);
        if (a->output) {
            cJSON *arr = cJSON_CreateArray();
            for (size_t i = start; i < n; i++) {
                char *p = is_dir ? cli_path_join(file, v[i].name) : strdup(file);
                cJSON_AddItemToArray(arr, info_json(&v[i], p ? p : ""));
                free(p);
            }
            rc = out_json(arr);
            cJSON_Delete(arr);
        } else {
            for (size_t i = start; i < n; i++) {
                if (a->long_) {
                    char mode[12], mt[40];
                    cli_mode_string(v[i].type, v[i].mode, mode);
                    kj_time_format(v[i].mtime_ms, mt, sizeof(mt));
                    printf("%s %12llu %s %s%s%s\n", mode, (unsigned long long)v[i].size, mt, v[i].name,
                           v[i].type == 'l' ? " -> " : "", v[i].type == 'l' ? v[i].link : "");
                } else {
                    printf("%s\n", v[i].name);
                }
            }
            if (fflush(stdout) != 0) rc = 1;
        }
    }
    cli_file_infos_free(v, n);
    free(file);
    return rc;
}

/* stat SANDBOX PATH [-o json] */
int cmd_stat(struct cli *c) {
    struct args *a = c->a;
    if (out_check_format(a->output, "json")) return 2;
    char pod[256], *file;
    if (session_file_setup(c, a->pos[1], pod, sizeof(pod), &file)) return 1;
    struct cli_file_info *v = NULL;
    size_t n = 0;
    int rc = find_listing(c, pod, file, 0, &v, &n);
    if (rc == 0 && n != 1) rc = cli_fail("stat: unexpected output from the listing in the sandbox");
    if (rc == 0) {
        if (a->output) {
            cJSON *o = info_json(&v[0], file);
            rc = out_json(o);
            cJSON_Delete(o);
        } else {
            char mode[12], mt[40];
            cli_mode_string(v[0].type, v[0].mode, mode);
            kj_time_format(v[0].mtime_ms, mt, sizeof(mt));
            printf("Name:     %s\n", v[0].name);
            printf("Path:     %s\n", file);
            printf("Type:     %s\n", type_name(v[0].type));
            printf("Size:     %llu\n", (unsigned long long)v[0].size);
            printf("Mode:     %s (%04o)\n", mode, v[0].mode);
            printf("Modified: %s\n", mt);
            if (v[0].type == 'l') printf("Target:   %s\n", v[0].link);
            if (fflush(stdout) != 0) rc = 1;
        }
    }
    cli_file_infos_free(v, n);
    free(file);
    return rc;
}

/* mkdir / rm: a plain command on one path whose only output is its complaint. */
static int simple_op(struct cli *c, const char *pod, const char *const *argv, size_t argc) {
    struct dynbuf errb;
    dynbuf_init(&errb, STDERR_KEEP);
    struct session_io x = {.out_fd = 2, .err_fd = -1, .err_buf = &errb, .in_fd = -1};
    int code = -1, rc = session_file_op(c, pod, argv, argc, &x, 0, &code);
    if (rc == 0 && code != 0) rc = session_failed(&errb, code);
    dynbuf_free(&errb);
    return rc;
}

/* mkdir SANDBOX PATH [-p] */
int cmd_mkdir(struct cli *c) {
    char pod[256], *file;
    if (session_file_setup(c, c->a->pos[1], pod, sizeof(pod), &file)) return 1;
    const char *with_p[] = {"mkdir", "-p", "--", file};
    const char *plain[] = {"mkdir", "--", file};
    int rc = c->a->parents ? simple_op(c, pod, with_p, 4) : simple_op(c, pod, plain, 3);
    free(file);
    return rc;
}

/* rm SANDBOX PATH [-r] [-f] (never "/") */
int cmd_rm(struct cli *c) {
    char pod[256], *file;
    if (session_file_setup(c, c->a->pos[1], pod, sizeof(pod), &file)) return 1;
    if (file[strspn(file, "/")] == '\0') { free(file); return cli_fail("rm: refusing to remove /"); }
    const char *argv[6];
    size_t k = 0;
    argv[k++] = "rm";
    if (c->a->recursive) argv[k++] = "-r";
    if (c->a->force) argv[k++] = "-f";
    argv[k++] = "--";
    argv[k++] = file;
    int rc = simple_op(c, pod, argv, k);
    free(file);
    return rc;
}
