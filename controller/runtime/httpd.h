/* runtime/httpd.h — the HTTP/1.1 server for /healthz, /readyz and /metrics, on
 * libwebsockets' server role: GET and HEAD only, an event loop on one thread (a slow or
 * stuck client never delays another), a deadline of about a second per request from
 * accept to the last byte sent (reads, writes and keep-alive idling included), and a
 * bounded number of open connections. Not a general web server: it answers probes. */
#ifndef YAO_RUNTIME_HTTPD_H
#define YAO_RUNTIME_HTTPD_H

#include "base/dynbuf.h"

/* Fill body for path; return the HTTP status. *content_type defaults to text/plain. */
typedef int (*httpd_handler_fn)(void *ud, const char *path, struct dynbuf *body, const char **content_type);

struct httpd;

/* Listen on addr ("host:port", ":port" = all interfaces, port 0 = any). NULL with err. */
struct httpd *httpd_start(const char *addr, httpd_handler_fn fn, void *ud, char *err, size_t errlen);
/* The port actually bound. */
int httpd_port(struct httpd *h);
void httpd_stop(struct httpd *h);

#endif
