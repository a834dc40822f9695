/* cli/paths.c — sandbox and archive paths, pure string work (see paths.h): joining a path
 * to a base, splitting it for `tar -C DIR NAME`, the canonical form of an archive member
 * name, whether a symlink's target stays inside its tree, and the base name ls shows. */
#include "cli/paths.h"

#include <stdlib.h>
#include <string.h>

/* a + "/" + b (see header). */
char *cli_path_append(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    int slash = la > 0 && a[la - 1] != '/';
    char *p = malloc(la + (size_t)slash + lb + 1);
    if (!p) return NULL;
    memcpy(p, a, la);
    if (slash) p[la] = '/';
    memcpy(p + la + (size_t)slash, b, lb + 1);
    return p;
}

/* Resolve a sandbox path against base (see header). */
char *cli_path_join(const char *base, const char *path) {
    if (!path) path = "";
    if (path[0] == '/' || !base || !*base) return strdup(*path ? path : ".");
    if (!*path) return strdup(base);
    return cli_path_append(base, path);
}

/* dirname/basename for tar -C DIR NAME (see header). */
int cli_path_split(const char *path, char **dir, char **name) {
    *dir = *name = NULL;
    if (!path || !*path) return -1;
    char *p = strdup(path);
    if (!p) return -1;
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
    char *slash = strrchr(p, '/');
    const char *base = slash ? slash + 1 : p;
    if (!strcmp(p, "/") || !strcmp(base, ".") || !strcmp(base, "..")) {
        *dir = p;
        *name = strdup(".");
        p = NULL;
    } else if (!slash) {
        *dir = strdup(".");
        *name = p;
        p = NULL;
    } else {
        *name = strdup(base);
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

/* The base name ls shows (see header). */
char *cli_base_name(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    if (n == 1 && path[0] == '/') return strdup("/");
    size_t b = n;
    while (b > 0 && path[b - 1] != '/') b--;
    char *r = malloc(n - b + 1);
    if (!r) return NULL;
    memcpy(r, path + b, n - b);
    r[n - b] = '\0';
    return r;
}
