/* cli/logstream.h — a streamed GET (pods/NAME/log): the body goes to a file descriptor as
 * it arrives, never held whole (a followed log has no end until its container's), with
 * the client's TLS, auth, proxy and impersonation (kube_client_setup_handle). An error
 * answer's body is kept (bounded) for its message instead. */
#ifndef YAO_CLI_LOGSTREAM_H
#define YAO_CLI_LOGSTREAM_H

#include <stddef.h>

struct kube_client;

/* GET path, the body of a 2xx answer written to fd. Returns the HTTP status (0: no answer,
 * or writing to fd failed: err says which; CLI_STREAM_CLOSED: whoever reads fd went away,
 * as `logs -f | head` does), with err holding the server's message for a status >= 300.
 * Runs until the server ends the body (or the process is interrupted). */
#define CLI_STREAM_CLOSED (-2)
long cli_stream_get(struct kube_client *kc, const char *path, int fd, char *err, size_t errlen);

#endif
