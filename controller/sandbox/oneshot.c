/* sandbox/oneshot.c — argv building and stream tails for one-shot runs (see oneshot.h). */
#include "sandbox/oneshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sbx_run_argv_free(char **argv) {
    if (!argv) return;
    for (char **p = argv; *p; p++) free(*p);
    free(argv);
}

int sbx_run_argv(const struct sbx_run *run, char ***argv_out, size_t *argc_out) {
    if (!run->present || run->command.n == 0) return -1;
    int wrap = run->working_dir || run->nenv > 0;
    size_t n = run->command.n + (wrap ? 1 + run->nenv + 4 : 0);
    char **argv = calloc(n + 1, sizeof(*argv));
    size_t i = 0;
    if (!argv) return -1;
    if (wrap) {
        if (!(argv[i++] = strdup("env"))) goto fail;
        for (size_t e = 0; e < run->nenv; e++) {
            size_t len = strlen(run->env[e].name) + strlen(run->env[e].value ? run->env[e].value : "") + 2;
            if (!(argv[i] = malloc(len))) goto fail;
            snprintf(argv[i++], len, "%s=%s", run->env[e].name, run->env[e].value ? run->env[e].value : "");
        }
        if (!(argv[i++] = strdup("sh")) || !(argv[i++] = strdup("-c"))) goto fail;
        if (!(argv[i++] = strdup(run->working_dir ? "cd -- \"$0\" && exec \"$@\"" : "exec \"$@\""))) goto fail;
        if (!(argv[i++] = strdup(run->working_dir ? run->working_dir : "sh"))) goto fail;
    }
    for (size_t c = 0; c < run->command.n; c++)
        if (!(argv[i++] = strdup(run->command.v[c]))) goto fail;
    *argv_out = argv;
    *argc_out = i;
    return 0;
fail:
    sbx_run_argv_free(argv);
    return -1;
}

void sbx_tail_add(struct sbx_tail *t, const char *p, size_t n) {
    t->total += n;
    if (n >= SBX_TAIL_MAX) {
        memcpy(t->ring, p + n - SBX_TAIL_MAX, SBX_TAIL_MAX);
        t->start = 0;
        t->len = SBX_TAIL_MAX;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        size_t end = (t->start + t->len) % SBX_TAIL_MAX;
        t->ring[end] = p[i];
        if (t->len < SBX_TAIL_MAX) t->len++;
        else t->start = (t->start + 1) % SBX_TAIL_MAX;
    }
}

void sbx_tail_text(const struct sbx_tail *t, char *out) {
    size_t o = 0, i = 0;
    /* Drop UTF-8 continuation bytes cut off from their lead byte. */
    if (t->total > t->len)
        while (i < t->len && ((unsigned char)t->ring[(t->start + i) % SBX_TAIL_MAX] & 0xC0) == 0x80) i++;
    for (; i < t->len; i++) {
        unsigned char c = (unsigned char)t->ring[(t->start + i) % SBX_TAIL_MAX];
        out[o++] = (c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f ? '?' : (char)c;
    }
    out[o] = 0;
}

int sbx_tail_truncated(const struct sbx_tail *t) { return t->total > t->len; }
