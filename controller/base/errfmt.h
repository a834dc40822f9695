/* base/errfmt.h — the one printf-style helper for error messages: every layer that hands
 * a failure back through a caller's `char *err, size_t errlen` (or a struct's err[]) fills
 * it here, so NULL-safety, truncation and the one-line rule live in one place.
 * base/ is the bottom layer: it includes nothing of the project's. */
#ifndef YAO_BASE_ERRFMT_H
#define YAO_BASE_ERRFMT_H

#include <stdarg.h>
#include <stddef.h>

/* Format a message into err (at most errlen bytes with the NUL; silently truncated).
 * Nothing is written when err is NULL or errlen 0. Returns -1, so a failing function can
 * `return errfmt(err, errlen, "...", ...);`. */
int errfmt(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The one spelling of an allocation failure, for messages built elsewhere (cli_fail). */
#define ERR_OOM "out of memory"
/* errfmt(err, errlen, ERR_OOM). Returns -1. */
int errfmt_oom(char *err, size_t errlen);
/* errfmt with a va_list, for helpers that record more than the message. Returns -1. */
int errfmt_v(char *err, size_t errlen, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
/* errfmt for messages that quote untrusted text (a document's names and values, which may
 * hold line breaks): control bytes become '?' so the message stays one line. Returns -1. */
int errfmt_line(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
