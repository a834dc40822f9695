/* tests/unit/test_kjson.c — cJSON helpers and RFC 3339 time (kube/kjson.c): dotted paths,
 * typed getters with missing and wrong-typed items, map lookups with dotted keys; time
 * parsing against independently computed epoch values (UTC, fractions, offsets, leap
 * years, the epoch, before it), rejection of malformed and out-of-range input, and both
 * formats with round trips. */
#include "check.h"

#include <math.h>

#include "kube/kjson.h"

/* 2026-11-29T10:00:00Z (date -u -d 2026-11-29T10:00:00Z +%s) */
#define T0 INT64_C(1795946400000)

static const char *doc_text =
    "{\"apiVersion\":\"sandbox.yaoapps.com/v1alpha1\","
    " \"metadata\":{\"name\":\"s1\",\"generation\":3,\"uid\":\"u-1\","
    "   \"labels\":{\"app\":\"x\",\"sandbox.yaoapps.com/name\":\"s1\",\"n\":5},"
    "   \"annotations\":{\"sandbox.yaoapps.com/last-used-at\":\"2026-11-29T10:00:00Z\"}},"
    " \"spec\":{\"paused\":true,\"off\":false,\"nothing\":null,\"count\":\"7\","
    "   \"ratio\":1.9,\"neg\":-2.5,\"big\":9007199254740993,\"zero\":0,"
    "   \"nested\":{\"deep\":{\"x\":42}}},"
    " \"arr\":[{\"a\":1}],"
    " \"a.b\":\"dotted\"}";

static cJSON *doc(void) {
    cJSON *d = cJSON_Parse(doc_text);
    CHECK(d != NULL);
    return d;
}

/* ---- paths and getters ---------------------------------------------------------------- */

TEST(path_lookup) {
    cJSON *d = doc();
    const cJSON *v = kj_path(d, "metadata.name");
    CHECK(cJSON_IsString(v));
    CHECK_STR(v->valuestring, "s1");
    CHECK(cJSON_IsObject(kj_path(d, "metadata")));
    CHECK(kj_path(d, "spec.nested.deep.x") != NULL);
    CHECK_INT(kj_path(d, "spec.nested.deep.x")->valueint, 42);
    CHECK(kj_path(d, "") == d);                        /* empty path: the object itself */
    CHECK(kj_path(d, "metadata.missing") == NULL);
    CHECK(kj_path(d, "missing.name") == NULL);
    CHECK(kj_path(d, "metadata.name.more") == NULL);   /* through a string */
    CHECK(kj_path(d, "spec.nothing.x") == NULL);       /* through null */
    CHECK(kj_path(d, "Metadata.name") == NULL);        /* case-sensitive */
    CHECK(kj_path(d, "arr.0") == NULL);                /* no array indexing */
    CHECK(kj_path(d, "arr.a") == NULL);
    CHECK(kj_path(d, "a.b") == NULL);                  /* dotted keys are not reachable */
    CHECK(kj_path(NULL, "metadata") == NULL);
    CHECK(kj_path(NULL, "") == NULL);
    /* a path segment longer than the internal buffer is not found (and not overrun) */
    char longp[300];
    memset(longp, 'm', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = '\0';
    CHECK(kj_path(d, longp) == NULL);
    cJSON_Delete(d);
}

TEST(condition_by_type) {
    cJSON *d = cJSON_Parse("{\"status\":{\"conditions\":[{\"status\":\"True\"},"
                           "{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\"},"
                           "{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"False\"}]}}");
    CHECK(d != NULL);
    CHECK_STR(kj_str(kj_condition(d, "PodScheduled"), "reason"), "Unschedulable");
    CHECK_STR(kj_str(kj_condition(d, "Ready"), "status"), "True");   /* the first of the type */
    CHECK(kj_condition(d, "Initialized") == NULL);
    CHECK(kj_condition(d, NULL) == NULL);
    CHECK(kj_condition(NULL, "Ready") == NULL);
    cJSON *none = cJSON_Parse("{\"status\":{\"conditions\":{\"type\":\"Ready\"}}}");   /* not an array */
    CHECK(kj_condition(none, "Ready") == NULL);
    cJSON_Delete(none);
    cJSON_Delete(d);
}

TEST(str_getter) {
    cJSON *d = doc();
    CHECK_STR(kj_str(d, "metadata.name"), "s1");
    CHECK_STR(kj_str(d, "apiVersion"), "sandbox.yaoapps.com/v1alpha1");
    CHECK_STR(kj_str(d, "spec.count"), "7");
    CHECK(kj_str(d, "metadata.generation") == NULL);   /* number */
    CHECK(kj_str(d, "metadata") == NULL);              /* object */
    CHECK(kj_str(d, "spec.paused") == NULL);           /* bool */
    CHECK(kj_str(d, "spec.nothing") == NULL);          /* null */
    CHECK(kj_str(d, "arr") == NULL);                   /* array */
    CHECK(kj_str(d, "metadata.nope") == NULL);
    CHECK(kj_str(NULL, "metadata.name") == NULL);
    cJSON_Delete(d);
}

TEST(int_getter) {
    cJSON *d = doc();
    CHECK_INT(kj_int(d, "metadata.generation", -1), 3);
    CHECK_INT(kj_int(d, "spec.zero", -1), 0);
    CHECK_INT(kj_int(d, "spec.nested.deep.x", -1), 42);
    CHECK_INT(kj_int(d, "spec.ratio", -1), 1);         /* truncated */
    CHECK_INT(kj_int(d, "spec.neg", 0), -2);
    CHECK_INT(kj_int(d, "spec.big", 0), INT64_C(9007199254740992)); /* double precision */
    CHECK_INT(kj_int(d, "metadata.missing", -1), -1);
    CHECK_INT(kj_int(d, "metadata.missing", 77), 77);
    CHECK_INT(kj_int(d, "spec.count", -1), -1);        /* "7" is a string */
    CHECK_INT(kj_int(d, "spec.paused", -1), -1);
    CHECK_INT(kj_int(d, "spec.nothing", -1), -1);
    CHECK_INT(kj_int(d, "metadata", -1), -1);
    CHECK_INT(kj_int(NULL, "x", 5), 5);
    cJSON_Delete(d);
}

TEST(int_getter_out_of_range_saturates) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "huge", 1e300);
    cJSON_AddNumberToObject(o, "tiny", -1e300);
    cJSON_AddNumberToObject(o, "two63", 9223372036854775808.0);
    cJSON_AddNumberToObject(o, "inf", INFINITY);
    cJSON_AddNumberToObject(o, "nan", NAN);
    cJSON_AddNumberToObject(o, "max_exact", 9007199254740992.0);
    CHECK_INT(kj_int(o, "huge", 0), INT64_MAX);
    CHECK_INT(kj_int(o, "tiny", 0), INT64_MIN);
    CHECK_INT(kj_int(o, "two63", 0), INT64_MAX);
    CHECK_INT(kj_int(o, "inf", 0), INT64_MAX);
    CHECK_INT(kj_int(o, "nan", -9), -9);
    CHECK_INT(kj_int(o, "max_exact", 0), INT64_C(9007199254740992));
    cJSON_Delete(o);
    /* parsed from text, too */
    o = cJSON_Parse("{\"g\":1e400,\"h\":-1e400}");
    CHECK(o != NULL);
    CHECK_INT(kj_int(o, "g", 0), INT64_MAX);
    CHECK_INT(kj_int(o, "h", 0), INT64_MIN);
    cJSON_Delete(o);
}

TEST(bool_getter) {
    cJSON *d = doc();
    CHECK_INT(kj_bool(d, "spec.paused", 0), 1);
    CHECK_INT(kj_bool(d, "spec.off", 1), 0);
    CHECK_INT(kj_bool(d, "spec.missing", 0), 0);
    CHECK_INT(kj_bool(d, "spec.missing", 1), 1);
    CHECK_INT(kj_bool(d, "spec.zero", 7), 7);      /* number, not bool */
    CHECK_INT(kj_bool(d, "spec.count", 7), 7);     /* string */
    CHECK_INT(kj_bool(d, "spec.nothing", 7), 7);   /* null */
    CHECK_INT(kj_bool(d, "spec", 7), 7);           /* object */
    CHECK_INT(kj_bool(NULL, "spec.paused", 3), 3);
    cJSON_Delete(d);
}

TEST(map_get) {
    cJSON *d = doc();
    CHECK_STR(kj_map_get(d, "metadata.labels", "app"), "x");
    CHECK_STR(kj_map_get(d, "metadata.labels", "sandbox.yaoapps.com/name"), "s1");
    CHECK_STR(kj_map_get(d, "metadata.annotations", "sandbox.yaoapps.com/last-used-at"),
              "2026-11-29T10:00:00Z");
    CHECK_STR(kj_map_get(d, "", "a.b"), "dotted");
    CHECK(kj_map_get(d, "metadata.labels", "missing") == NULL);
    CHECK(kj_map_get(d, "metadata.labels", "APP") == NULL);
    CHECK(kj_map_get(d, "metadata.labels", "n") == NULL);    /* non-string value */
    CHECK(kj_map_get(d, "metadata.nolabels", "app") == NULL);
    CHECK(kj_map_get(d, "metadata.name", "app") == NULL);    /* not a map */
    CHECK(kj_map_get(d, "spec.nothing", "app") == NULL);
    CHECK(kj_map_get(NULL, "metadata.labels", "app") == NULL);
    cJSON_Delete(d);
}

/* ---- time parsing --------------------------------------------------------------------- */

/* Parsed value, or the sentinel 42 when parsing fails (and must not touch *ms). */
static int64_t tp(const char *s) {
    int64_t ms = 42;
    if (kj_time_parse(s, &ms) != 0) {
        CHECK_INT(ms, 42);
        return 42;
    }
    return ms;
}

static int rejects(const char *s) {
    int64_t ms = 42;
    int rc = kj_time_parse(s, &ms);
    if (rc == 0) fprintf(stderr, "  accepted \"%s\" as %lld\n", s ? s : "(null)", (long long)ms);
    return rc == -1 && ms == 42;
}

TEST(time_parse_utc) {
    CHECK_INT(tp("2026-11-29T10:00:00Z"), T0);
    CHECK_INT(tp("2026-11-29t10:00:00z"), T0);         /* RFC 3339 allows lower case */
    CHECK_INT(tp("2026-11-29 10:00:00Z"), T0);         /* and a space (its §5.6 note) */
    CHECK_INT(tp("1970-01-01T00:00:00Z"), 0);
    CHECK_INT(tp("1970-01-01T00:00:01Z"), 1000);
    CHECK_INT(tp("2026-12-31T23:59:59Z"), INT64_C(1798761599000));
    CHECK_INT(tp("2026-03-08T02:30:00Z"), INT64_C(1772937000000));
    CHECK_INT(tp("9999-12-31T23:59:59Z"), INT64_C(253402300799000));
}

TEST(time_parse_fraction) {
    CHECK_INT(tp("2026-11-29T10:00:00.5Z"), T0 + 500);
    CHECK_INT(tp("2026-11-29T10:00:00.05Z"), T0 + 50);
    CHECK_INT(tp("2026-11-29T10:00:00.123Z"), T0 + 123);
    CHECK_INT(tp("2026-11-29T10:00:00.123456Z"), T0 + 123);      /* MicroTime */
    CHECK_INT(tp("2026-11-29T10:00:00.999999999Z"), T0 + 999);   /* truncated, not rounded */
    CHECK_INT(tp("2026-11-29T10:00:00.000001Z"), T0);
    CHECK_INT(tp("2026-11-29T10:00:00.1234567890123456789Z"), T0 + 123);
    CHECK_INT(tp("2026-11-29T12:00:00.250+02:00"), T0 + 250);
}

TEST(time_parse_offsets) {
    CHECK_INT(tp("2026-11-29T12:00:00+02:00"), T0);
    CHECK_INT(tp("2026-11-29T04:30:00-05:30"), T0);
    CHECK_INT(tp("2026-11-29T10:00:00+00:00"), T0);
    CHECK_INT(tp("2026-11-29T10:00:00-00:00"), T0);
    /* the offset moves the date across midnight and the year */
    CHECK_INT(tp("2026-11-30T01:00:00+15:00"), T0);
    CHECK_INT(tp("2027-01-01T05:29:59+05:30"), INT64_C(1798761599000));
    CHECK_INT(tp("2026-12-31T18:59:59-05:00"), INT64_C(1798761599000));
    CHECK_INT(tp("2026-11-29T10:00:00+23:59"), T0 - (23 * 3600 + 59 * 60) * INT64_C(1000));
}

TEST(time_parse_leap_years) {
    CHECK_INT(tp("2024-02-29T00:00:00Z"), INT64_C(1709164800000));
    CHECK_INT(tp("2000-02-29T00:00:00Z"), INT64_C(951782400000));   /* divisible by 400 */
    CHECK_INT(tp("2000-03-01T00:00:00Z"), INT64_C(951868800000));
    CHECK_INT(tp("2024-03-01T00:00:00Z") - tp("2024-02-28T00:00:00Z"), 2 * 86400000);
    CHECK_INT(tp("2026-03-01T00:00:00Z") - tp("2026-02-28T00:00:00Z"), 86400000);
    CHECK_INT(tp("2100-03-01T00:00:00Z") - tp("2100-02-28T00:00:00Z"), 86400000);
}

TEST(time_parse_before_epoch) {
    CHECK_INT(tp("1969-12-31T23:59:59Z"), -1000);
    CHECK_INT(tp("1969-12-31T23:59:59.5Z"), -500);
    CHECK_INT(tp("1900-01-01T00:00:00Z"), INT64_C(-2208988800000));
    CHECK_INT(tp("1970-01-01T01:00:00+02:00"), -3600000);
}

TEST(time_parse_rejects) {
    CHECK(rejects("2026-13-01T00:00:00Z"));    /* month 13 */
    CHECK(rejects("2026-00-10T00:00:00Z"));
    CHECK(rejects("2026-11-00T00:00:00Z"));
    CHECK(rejects("2026-11-32T00:00:00Z"));
    CHECK(rejects("2026-11-29T24:00:00Z"));
    CHECK(rejects("2026-11-29T10:60:00Z"));
    CHECK(rejects("2026-11-29T10:00:61Z"));
    CHECK(rejects("2026-11-29 10:00:00"));     /* no zone */
    CHECK(rejects("2026-11-29T10:00:00"));
    CHECK(rejects("2026-11-29"));
    CHECK(rejects(""));
    CHECK(rejects("garbage"));
    CHECK(rejects(NULL));
    CHECK(rejects("2026-11-29T10:00:00Zjunk")); /* trailing junk */
    CHECK(rejects("2026-11-29T10:00:00Z "));
    CHECK(rejects("2026-11-29T10:00:00+02:00x"));
    CHECK(rejects("2026-11-29T10:00:00.Z"));    /* fraction without digits */
    CHECK(rejects("2026-11-29T10:00:00,5Z"));
    CHECK(rejects("2026-11-29T10:00:00+0200")); /* offset needs a colon */
    CHECK(rejects("2026-11-29T10:00:00+2:00"));
    CHECK(rejects("2026-11-29T10:00:00+02"));
    CHECK(rejects("2026-11-29T10:00:00UTC"));
    CHECK(rejects("2026-11-29T10:00Z"));        /* seconds are required */
    CHECK(rejects("26-11-29T10:00:00Z"));
    CHECK(rejects("2026-1-29T10:00:00Z"));
    CHECK(rejects("2026/11/29T10:00:00Z"));
    CHECK(rejects("2026-11-29X10:00:00Z"));
    CHECK(rejects(" 2026-11-29T10:00:00Z"));
    CHECK(rejects("-2026-11-29T10:00:00Z"));
    CHECK(rejects("2026-11-29T1a:00:00Z"));
    CHECK(rejects("2026-11-29T10:00:00Z\n"));
}

TEST(time_parse_rejects_impossible_dates_and_offsets) {
    CHECK(rejects("2026-02-29T00:00:00Z"));    /* not a leap year */
    CHECK(rejects("2100-02-29T00:00:00Z"));    /* divisible by 100, not by 400 */
    CHECK(rejects("2024-02-30T00:00:00Z"));
    CHECK(rejects("2026-04-31T00:00:00Z"));
    CHECK(rejects("2026-06-31T00:00:00Z"));
    CHECK(rejects("2026-09-31T00:00:00Z"));
    CHECK(rejects("2026-11-31T00:00:00Z"));
    CHECK_INT(tp("2026-01-31T00:00:00Z") + 86400000, tp("2026-02-01T00:00:00Z"));
    CHECK_INT(tp("2026-12-31T00:00:00Z") + 86400000, tp("2027-01-01T00:00:00Z"));
    CHECK(rejects("2026-11-29T10:00:00+24:00"));
    CHECK(rejects("2026-11-29T10:00:00+02:60"));
    CHECK(rejects("2026-11-29T10:00:00-99:99"));
}

/* ---- time formatting ------------------------------------------------------------------ */

static const char *fmt(int64_t ms) {
    static char out[64];
    memset(out, 'X', sizeof(out));
    kj_time_format(ms, out, sizeof(out));
    return out;
}

static const char *fmt_micro(int64_t ms) {
    static char out[64];
    memset(out, 'X', sizeof(out));
    kj_time_format_micro(ms, out, sizeof(out));
    return out;
}

TEST(time_format) {
    CHECK_STR(fmt(T0), "2026-11-29T10:00:00Z");
    CHECK_STR(fmt(T0 + 999), "2026-11-29T10:00:00Z");   /* whole seconds, truncated */
    CHECK_STR(fmt(0), "1970-01-01T00:00:00Z");
    CHECK_STR(fmt(INT64_C(1709164800000)), "2024-02-29T00:00:00Z");
    CHECK_STR(fmt(INT64_C(253402300799999)), "9999-12-31T23:59:59Z");
    CHECK_INT(strlen(fmt(T0)), 20);
    /* the documented minimum buffer is enough */
    char small[32];
    kj_time_format(T0, small, sizeof(small));
    CHECK_STR(small, "2026-11-29T10:00:00Z");
}

TEST(time_format_micro) {
    CHECK_STR(fmt_micro(T0), "2026-11-29T10:00:00.000000Z");
    CHECK_STR(fmt_micro(T0 + 123), "2026-11-29T10:00:00.123000Z");
    CHECK_STR(fmt_micro(T0 + 5), "2026-11-29T10:00:00.005000Z");
    CHECK_STR(fmt_micro(T0 + 999), "2026-11-29T10:00:00.999000Z");
    CHECK_STR(fmt_micro(0), "1970-01-01T00:00:00.000000Z");
    /* exactly six fraction digits */
    const char *s = fmt_micro(T0 + 42);
    const char *dot = strchr(s, '.');
    CHECK(dot != NULL);
    if (dot) {
        CHECK_INT(strspn(dot + 1, "0123456789"), 6);
        CHECK_STR(dot + 7, "Z");
    }
    CHECK_INT(strlen(s), 27);
    char small[40];
    kj_time_format_micro(INT64_C(253402300799999), small, sizeof(small));
    CHECK_STR(small, "9999-12-31T23:59:59.999000Z");
}

TEST(time_format_before_epoch) {
    CHECK_STR(fmt(-1000), "1969-12-31T23:59:59Z");
    CHECK_STR(fmt(-500), "1969-12-31T23:59:59Z");
    CHECK_STR(fmt(-1), "1969-12-31T23:59:59Z");
    CHECK_STR(fmt_micro(-500), "1969-12-31T23:59:59.500000Z");
    CHECK_STR(fmt_micro(-1), "1969-12-31T23:59:59.999000Z");
    CHECK_STR(fmt_micro(INT64_C(-2208988800000)), "1900-01-01T00:00:00.000000Z");
}

TEST(time_round_trips) {
    /* a spread of instants, including odd milliseconds and leap days */
    static const int64_t at[] = {
        0, 1, 999, 1000, INT64_C(951782400000), INT64_C(951782400123),
        INT64_C(1709164800000), INT64_C(1709251199999), T0, T0 + 1, T0 + 86399999,
        INT64_C(1798761599999), INT64_C(4102444800000), INT64_C(253402300799999),
        -1, -500, -1000, INT64_C(-2208988800000), INT64_C(-2208988799001),
    };
    char buf[64];
    int bad = 0;
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        int64_t ms = 0, whole = at[i] - ((at[i] % 1000 + 1000) % 1000);
        kj_time_format_micro(at[i], buf, sizeof(buf));
        if (kj_time_parse(buf, &ms) != 0 || ms != at[i]) {
            fprintf(stderr, "  micro %lld -> %s -> %lld\n", (long long)at[i], buf, (long long)ms);
            bad++;
        }
        kj_time_format(at[i], buf, sizeof(buf));
        if (kj_time_parse(buf, &ms) != 0 || ms != whole) {
            fprintf(stderr, "  whole %lld -> %s -> %lld\n", (long long)at[i], buf, (long long)ms);
            bad++;
        }
    }
    /* every day of four years, at a varying time of day */
    for (int64_t day = 0; day < 4 * 366; day++) {
        int64_t t = INT64_C(1704067200000) + day * 86400000 + (day * 7919 % 86400) * 1000 + day % 1000;
        int64_t ms = 0;
        kj_time_format_micro(t, buf, sizeof(buf));
        if (kj_time_parse(buf, &ms) != 0 || ms != t) bad++;
    }
    CHECK_INT(bad, 0);
}

TEST(now_is_plausible) {
    int64_t now = kj_now_ms();
    CHECK(now > INT64_C(1704067200000));   /* after 2024-01-01 */
    CHECK(now < INT64_C(4102444800000));   /* before 2100-01-01 */
    int64_t later = kj_now_ms();
    CHECK(later >= now - 1000);
}
