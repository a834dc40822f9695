/* kube/proxy.h — which HTTP proxy a connection to the API server goes through, as
 * client-go decides it, and the HTTP CONNECT tunnel's two messages (pure: no I/O; the
 * environment is passed in). The REST client hands the choice to libcurl (kube/rest.c);
 * the WebSocket stream of exec and port-forward sends CONNECT itself over its raw
 * connection (kube/wsstream.c).
 *
 * The rule: a cluster's proxy-url, when set, is used for every request. Otherwise the
 * environment: HTTPS_PROXY (or https_proxy) for an https server, HTTP_PROXY (or
 * http_proxy) for an http one, unless NO_PROXY (or no_proxy) names the server's host, and
 * never for localhost or a loopback address (Go's net/http does the same). NO_PROXY is a
 * comma-separated list of "*", host names (matching the name and its subdomains;
 * ".example.com" only subdomains), IP addresses and CIDR ranges, each optionally with
 * ":PORT". Only http:// proxies exist here (a value without a scheme is http://); userinfo
 * in the proxy URL becomes Proxy-Authorization: Basic. */
#ifndef YAO_KUBE_PROXY_H
#define YAO_KUBE_PROXY_H

#include <stddef.h>

struct kube_proxy_env {
    const char *https_proxy, *http_proxy, *no_proxy;   /* NULL = unset */
};

struct kube_proxy {
    int set;                 /* 0: connect directly */
    char host[256];          /* the proxy's host, IPv6 without brackets */
    int port;
    char userinfo[256];      /* "user:password", decoded; "" = none */
    char url[600];           /* "http://[userinfo@]host:port" for libcurl */
    char source[16];         /* "proxy-url", "HTTPS_PROXY", ... : where it came from */
};

/* The process's environment (upper case first, as Go reads it). */
void kube_proxy_env_from_process(struct kube_proxy_env *e);

/* Decide for server (the kubeconfig's URL) with the cluster's proxy_url (NULL or "" =
 * none) and env (NULL = the process's). 0 with *p (p->set 0 = direct), or -1 with err
 * naming the bad value (a scheme other than http, no host, a bad port). */
int kube_proxy_choose(const char *server, const char *proxy_url, const struct kube_proxy_env *env,
                      struct kube_proxy *p, char *err, size_t errlen);

/* 1 when the NO_PROXY list no_proxy names host (port: the server's, for entries with one). */
int kube_proxy_excluded(const char *no_proxy, const char *host, int port);

/* The CONNECT request for host:port (IPv6 bracketed), with Proxy-Authorization when p has
 * userinfo. Bytes written (NUL-terminated), or 0 when cap is too small. */
size_t kube_proxy_connect_request(char *out, size_t cap, const char *host, int port, const struct kube_proxy *p);

/* The proxy's answer to CONNECT, as it arrives: 0 while the header is incomplete, 1 when
 * it is complete (*status, *header_len: bytes up to and including the blank line; what
 * follows is the tunnel's), -1 when it is not HTTP or longer than 16 KiB. */
int kube_proxy_connect_answer(const char *buf, size_t len, int *status, size_t *header_len);

#endif
