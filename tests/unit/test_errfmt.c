/* tests/unit/test_errfmt.c — the shared error-message helper: it formats, truncates to
 * the buffer, writes nothing without one, always returns -1, passes a va_list through,
 * and errfmt_line keeps a message on one line. */
#include "check.h"
#include "base/errfmt.h"

#include <string.h>

/* A helper that records more than the message, as the callers of errfmt_v do. */
static int record(int *failed, char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int record(int *failed, char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    *failed = 1;
    va_start(ap, fmt);
    int rc = errfmt_v(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}

TEST(formats_and_returns_minus_one) {
    char err[64] = "old";
    CHECK_INT(errfmt(err, sizeof(err), "sandbox \"%s\": %d", "a", 42), -1);
    CHECK_STR(err, "sandbox \"a\": 42");
}

TEST(truncates_to_the_buffer) {
    char err[8];
    memset(err, 'x', sizeof(err));
    errfmt(err, sizeof(err), "%s", "0123456789");
    CHECK_STR(err, "0123456");
}

TEST(no_buffer_no_write) {
    char err[4] = "abc";
    CHECK_INT(errfmt(NULL, 16, "x"), -1);
    CHECK_INT(errfmt(err, 0, "x"), -1);
    CHECK_STR(err, "abc");
    CHECK_INT(errfmt_line(NULL, 16, "x"), -1);
    CHECK_INT(errfmt_line(err, 0, "x"), -1);
    CHECK_STR(err, "abc");
}

TEST(va_list_passes_through) {
    char err[32];
    int failed = 0;
    CHECK_INT(record(&failed, err, sizeof(err), "%s=%u", "k", 7u), -1);
    CHECK_INT(failed, 1);
    CHECK_STR(err, "k=7");
}

TEST(errfmt_keeps_line_breaks_errfmt_line_does_not) {
    char err[64];
    errfmt(err, sizeof(err), "a\nb");
    CHECK_STR(err, "a\nb");
    CHECK_INT(errfmt_line(err, sizeof(err), "name %s: bad", "x\r\ny\tz\x7f"), -1);
    CHECK_STR(err, "name x??y?z?: bad");
}
