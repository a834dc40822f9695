/* sandbox/model/podmetrics.c — the PodMetrics view (see podmetrics.h). */
#include "sandbox/model/podmetrics.h"

#include <stdio.h>
#include <string.h>

#include "base/errfmt.h"
#include "kube/kjson.h"
#include "sandbox/model/quantity.h"

int sbx_activity_parse_cpu(const char *s, int64_t *nanocores) {
    if (!s || !*s) return -1;
    size_t n = strlen(s);
    int64_t scale;   /* nanocores per unit of the number */
    char suffix = s[n - 1];
    if (suffix == 'n') scale = 1, n--;
    else if (suffix == 'u') scale = 1000, n--;
    else if (suffix == 'm') scale = 1000000, n--;
    else scale = 1000000000;
    if (n == 0 || n > 30) return -1;
    int64_t whole = 0, frac = 0, frac_scale = 1;
    size_t i = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        if (whole > (INT64_MAX - 9) / 10) return -1;
        whole = whole * 10 + (s[i] - '0');
    }
    if (i < n && s[i] == '.') {
        if (i == 0 && n == 1) return -1;
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
            if (frac_scale < 1000000000) { frac = frac * 10 + (s[i] - '0'); frac_scale *= 10; }
        }
    }
    if (i != n) return -1;
    if (whole > INT64_MAX / scale) return -1;
    *nanocores = whole * scale + frac * scale / frac_scale;
    return 0;
}

int sbx_activity_read(const cJSON *pm, struct sbx_activity *out, char *err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    const cJSON *containers = kj_path(pm, "containers"), *c;
    if (!cJSON_IsArray(containers) || !containers->child)
        return errfmt(err, errlen, "the PodMetrics has no containers");
    int64_t total = 0;
    cJSON_ArrayForEach(c, containers) {
        int64_t nc;
        const char *cpu = kj_str(c, "usage.cpu");
        if (sbx_activity_parse_cpu(cpu, &nc) < 0)
            return errfmt(err, errlen, "container %s: usage.cpu \"%.40s\" is not a CPU quantity",
                          kj_str(c, "name") ? kj_str(c, "name") : "?", cpu ? cpu : "");
        if (total > INT64_MAX - nc) return errfmt(err, errlen, "usage.cpu overflows");
        total += nc;
    }
    out->cpu_millis = (total + 500000) / 1000000;
    const char *ts = kj_str(pm, "timestamp"), *win = kj_str(pm, "window");
    if (ts) kj_time_parse(ts, &out->timestamp_ms);
    if (win) qty_parse_duration(win, &out->window_ms);
    return 0;
}
