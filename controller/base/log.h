/* base/log.h — structured one-line logs on stderr in logfmt:
 *   ts=2026-11-29T10:00:00.123Z level=info msg="pod created" sandbox=ns/name
 * The level threshold is process-wide (set once at start-up from --log-level). */
#ifndef YAO_BASE_LOG_H
#define YAO_BASE_LOG_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Set the threshold from a name ("debug", "info", "warn", "error"); unknown → info. */
void log_set_level(const char *name);
int log_enabled(enum log_level l);
/* Write one line: fmt continues after "level=X " (e.g. "msg=\"...\" key=%s"). */
void log_line(enum log_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LOGD(...) do { if (log_enabled(LOG_DEBUG)) log_line(LOG_DEBUG, __VA_ARGS__); } while (0)
#define LOGI(...) do { if (log_enabled(LOG_INFO)) log_line(LOG_INFO, __VA_ARGS__); } while (0)
#define LOGW(...) do { if (log_enabled(LOG_WARN)) log_line(LOG_WARN, __VA_ARGS__); } while (0)
#define LOGE(...) log_line(LOG_ERROR, __VA_ARGS__)

#endif
