/* kube/kjson.c — cJSON path helpers and RFC 3339 time conversion (see kjson.h). */
#include "kube/kjson.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

const cJSON *kj_condition(const cJSON *obj, const char *type) {
    const cJSON *c;
    cJSON_ArrayForEach(c, kj_path(obj, "status.conditions")) {
        const char *t = kj_str(c, "type");
        if (t && type && !strcmp(t, type)) return c;
    }
    return NULL;
}

void kj_strip_metadata(cJSON *obj) {
    cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    cJSON_DeleteItemFromObjectCaseSensitive(md, "managedFields");
    cJSON *ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
    cJSON_DeleteItemFromObjectCaseSensitive(ann, "kubectl.kubernetes.io/last-applied-configuration");
}

const cJSON *kj_path(const cJSON *obj, const char *path) {
    char part[128];
    const char *p = path;
    while (obj && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof(part)) return NULL;
        memcpy(part, p, n);
        part[n] = 0;
        obj = cJSON_GetObjectItemCaseSensitive(obj, part);
        p += n + (dot ? 1 : 0);
    }
    return obj;
}

const cJSON *kj_member(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNull(v) ? NULL : v;
}

const char *kj_str(const cJSON *obj, const char *path) {
    const cJSON *v = kj_path(obj, path);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

void kube_list_meta_read(const cJSON *list, struct kube_list_meta *out) {
    const cJSON *md = kj_member(list, "metadata");
    out->resource_version = kj_str(md, "resourceVersion");
    const char *next = kj_str(md, "continue");
    out->continue_ = next && *next ? next : NULL;
}

int64_t kj_int(const cJSON *obj, const char *path, int64_t def) {
    const cJSON *v = kj_path(obj, path);
    if (!cJSON_IsNumber(v) || v->valuedouble != v->valuedouble) return def;
    /* Clamp: converting a double outside int64_t's range is undefined. */
    if (v->valuedouble >= 9223372036854775808.0) return INT64_MAX;
    if (v->valuedouble <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v->valuedouble;
}

int kj_bool(const cJSON *obj, const char *path, int def) {
    const cJSON *v = kj_path(obj, path);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

const char *kj_map_get(const cJSON *obj, const char *path, const char *key) {
    const cJSON *m = kj_path(obj, path);
    const cJSON *v = m ? cJSON_GetObjectItemCaseSensitive(m, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Read exactly n digits. */
static int digits(const char **p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i])) return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

/* Days since 1970-01-01 of a civil date (proleptic Gregorian). */
static int64_t days_from_civil(int y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int kj_time_parse(const char *s, int64_t *ms) {
    int y, mo, d, h, mi, se, frac_ms = 0;
    const char *p = s;
    if (!s) return -1;
    if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' || digits(&p, 2, &d))
        return -1;
    if (*p != 'T' && *p != 't' && *p != ' ') return -1;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' || digits(&p, 2, &se))
        return -1;
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 60) return -1;
    if (mo == 2 && d == 29 && (y % 4 != 0 || (y % 100 == 0 && y % 400 != 0))) return -1;
    if (*p == '.') {
        p++;
        int n = 0, scale = 100;
        while (isdigit((unsigned char)*p)) {
            if (n < 3) { frac_ms += (*p - '0') * scale; scale /= 10; }
            n++;
            p++;
        }
        if (n == 0) return -1;
    }
    int64_t off_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59)
            return -1;
        off_s = sign * (oh * 3600 + om * 60);
    } else {
        return -1;
    }
    if (*p) return -1;
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off_s;
    *ms = secs * 1000 + frac_ms;
    return 0;
}

/* Whole seconds of ms, rounded down (also before the epoch). */
static time_t floor_secs(int64_t ms) { return (time_t)(ms / 1000 - (ms % 1000 < 0)); }

void kj_time_format(int64_t ms, char *out, size_t outlen) {
    time_t t = floor_secs(ms);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void kj_time_format_micro(int64_t ms, char *out, size_t outlen) {
    time_t t = floor_secs(ms);
    struct tm tm;
    char base[32];
    gmtime_r(&t, &tm);
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, outlen, "%s.%06dZ", base, (int)((ms % 1000 + 1000) % 1000) * 1000);
}

static _Atomic int64_t now_offset_ms;

void kj_now_offset_set(int64_t offset_ms) { atomic_store(&now_offset_ms, offset_ms); }

int64_t kj_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + atomic_load(&now_offset_ms);
}
