/* sandbox/oneshot.h — the pure parts of a one-shot run: turning spec.run into the argv
 * that is exec'd (working directory and env applied with `env` and `sh`, argv kept exact),
 * and keeping the last 4 KiB of a stream for status.run. The exec itself and the status
 * write are in reconcile.c. */
#ifndef YAO_SANDBOX_ONESHOT_H
#define YAO_SANDBOX_ONESHOT_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "sandbox/spec.h"

#define SBX_TAIL_MAX 4096

/* The argv for spec.run: the command itself, or
 *   env K=V... sh -c 'cd -- "$0" && exec "$@"' DIR CMD...
 * when workingDir or env is set. *argv is a NULL-terminated malloc'd array of malloc'd
 * strings (free with sbx_run_argv_free). 0 or -1 (ENOMEM / no command). */
int sbx_run_argv(const struct sbx_run *run, char ***argv, size_t *argc);
void sbx_run_argv_free(char **argv);

/* The last SBX_TAIL_MAX bytes of a stream. */
struct sbx_tail {
    char ring[SBX_TAIL_MAX];
    size_t start, len;      /* ring contents */
    uint64_t total;         /* bytes seen */
};

void sbx_tail_add(struct sbx_tail *t, const char *p, size_t n);
/* The tail as a JSON-safe string (NUL and other control bytes except \t \n \r replaced by
 * '?', a partial UTF-8 sequence at the start dropped). out >= SBX_TAIL_MAX + 1. */
void sbx_tail_text(const struct sbx_tail *t, char *out);
int sbx_tail_truncated(const struct sbx_tail *t);

#endif
