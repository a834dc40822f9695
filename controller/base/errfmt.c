/* base/errfmt.c — error messages into a caller's buffer (see errfmt.h). */
#include "base/errfmt.h"

#include <stdio.h>

/* vsnprintf into err, when there is room for a message at all. */
int errfmt_v(char *err, size_t errlen, const char *fmt, va_list ap) {
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    return -1;
}

/* printf-style errfmt_v. */
int errfmt(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    errfmt_v(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int errfmt_oom(char *err, size_t errlen) {
    return errfmt(err, errlen, "%s", ERR_OOM);
}

/* errfmt, then control bytes (and DEL) → '?'. */
int errfmt_line(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    if (!err || !errlen) return -1;
    va_start(ap, fmt);
    errfmt_v(err, errlen, fmt, ap);
    va_end(ap);
    for (char *p = err; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    return -1;
}
