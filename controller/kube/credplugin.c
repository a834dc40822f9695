/* kube/credplugin.c — running exec credential plugins and caching what they give (see
 * credplugin.h). The child gets our environment plus the plugin's env and
 * KUBERNETES_EXEC_INFO, stdout into a pipe we read (at most 1 MiB), stderr ours, stdin
 * ours or /dev/null. Credentials are wiped before they are freed. */
#include "kube/credplugin.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>

#include "base/clock.h"
#include "base/errfmt.h"
#include "kube/kjson.h"

#define PLUGIN_OUT_MAX ((size_t)1 << 20)
#define EXIT_EXEC_FAILED 127       /* the child could not exec the command */

extern char **environ;

static void wipe_free(char *p, size_t n) {
    if (!p) return;
    OPENSSL_cleanse(p, n);
    free(p);
}

void kube_exec_credential_free(struct kube_exec_credential *c) {
    if (!c) return;
    if (c->token) wipe_free(c->token, strlen(c->token));
    wipe_free(c->cert_pem, c->cert_len);
    wipe_free(c->key_pem, c->key_len);
    memset(c, 0, sizeof(*c));
}

/* Visible ASCII only: it goes into an Authorization header. */
static int header_safe(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e) return 0;
    return 1;
}

int kube_exec_credential_parse(const char *text, size_t len, const char *api_version,
                               struct kube_exec_credential *out, char *err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    cJSON *doc = cJSON_ParseWithLength(text, len);
    int rc = -1;
    if (!cJSON_IsObject(doc)) {
        errfmt(err, errlen, "its output is not a JSON object (an ExecCredential)");
        goto out;
    }
    const char *kind = kj_str(doc, "kind"), *av = kj_str(doc, "apiVersion");
    if (!kind || strcmp(kind, "ExecCredential") != 0) {
        errfmt_line(err, errlen, "its output is of kind \"%.60s\", not ExecCredential", kind ? kind : "");
        goto out;
    }
    if (!av || strcmp(av, api_version) != 0) {
        errfmt_line(err, errlen, "its output has apiVersion \"%.80s\", not %s as the kubeconfig asked",
                    av ? av : "", api_version);
        goto out;
    }
    const cJSON *status = kj_path(doc, "status");
    if (!cJSON_IsObject(status)) {
        errfmt(err, errlen, "its output has no status");
        goto out;
    }
    const char *token = kj_str(status, "token"), *cert = kj_str(status, "clientCertificateData"),
               *key = kj_str(status, "clientKeyData"), *exp = kj_str(status, "expirationTimestamp");
    if (token && !*token) token = NULL;
    if (cert && !*cert) cert = NULL;
    if (key && !*key) key = NULL;
    if (!cert != !key) {
        errfmt(err, errlen, "its output has clientCertificateData without clientKeyData or the other way round");
        goto out;
    }
    if (!token && !cert) {
        errfmt(err, errlen, "its output has neither a token nor clientCertificateData and clientKeyData");
        goto out;
    }
    if (token && !header_safe(token)) {
        errfmt(err, errlen, "its token contains spaces or control characters");
        goto out;
    }
    if (cert && (!strstr(cert, "-----BEGIN ") || !strstr(key, "-----BEGIN "))) {
        errfmt(err, errlen, "its clientCertificateData or clientKeyData is not PEM");
        goto out;
    }
    if (exp && *exp && kj_time_parse(exp, &out->expires_ms) < 0) {
        errfmt_line(err, errlen, "its expirationTimestamp \"%.60s\" is not an RFC 3339 time", exp);
        goto out;
    }
    if ((token && !(out->token = strdup(token))) ||
        (cert && (!(out->cert_pem = strdup(cert)) || !(out->key_pem = strdup(key))))) {
        errfmt_oom(err, errlen);
        goto out;
    }
    if (cert) {
        out->cert_len = strlen(out->cert_pem);
        out->key_len = strlen(out->key_pem);
    }
    rc = 0;
out:
    if (doc) {
        /* the document held the secrets: wipe its strings before it goes */
        cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, "status"), *it;
        cJSON_ArrayForEach(it, st)
            if (cJSON_IsString(it) && it->valuestring) OPENSSL_cleanse(it->valuestring, strlen(it->valuestring));
        cJSON_Delete(doc);
    }
    if (rc < 0) kube_exec_credential_free(out);
    return rc;
}

char *kube_exec_info(const char *api_version, int interactive, const char *cluster_json) {
    cJSON *o = cJSON_CreateObject(), *spec;
    char *s = NULL;
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "apiVersion", api_version);
    cJSON_AddStringToObject(o, "kind", "ExecCredential");
    if ((spec = cJSON_AddObjectToObject(o, "spec"))) {
        cJSON_AddBoolToObject(spec, "interactive", interactive);
        cJSON *cl = cluster_json ? cJSON_Parse(cluster_json) : NULL;
        if (cl) cJSON_AddItemToObject(spec, "cluster", cl);
        s = cJSON_PrintUnformatted(o);
    }
    cJSON_Delete(o);
    return s;
}

int kube_exec_credential_expired(int64_t expires_ms, int64_t now_ms) {
    return expires_ms > 0 && now_ms >= expires_ms;
}

/* The child's environment: ours, with the plugin's env and KUBERNETES_EXEC_INFO replacing
 * variables of the same name. NULL when out of memory. Strings are borrowed but info. */
static char **child_env(const struct kube_credplugin *p, char *info_var) {
    size_t n = 0;
    while (environ && environ[n]) n++;
    char **e = calloc(n + p->nenv + 2, sizeof(char *));
    if (!e) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        int replaced = nl == strlen("KUBERNETES_EXEC_INFO") && !strncmp(environ[i], "KUBERNETES_EXEC_INFO", nl);
        for (size_t j = 0; !replaced && j < p->nenv; j++) {
            const char *peq = strchr(p->env[j], '=');
            size_t pl = peq ? (size_t)(peq - p->env[j]) : strlen(p->env[j]);
            if (pl == nl && !strncmp(environ[i], p->env[j], nl)) replaced = 1;
        }
        if (!replaced) e[k++] = environ[i];
    }
    for (size_t j = 0; j < p->nenv; j++) e[k++] = p->env[j];
    e[k++] = info_var;
    e[k] = NULL;
    return e;
}

/* The command as a path to execute: one with a '/' as it is, a bare name looked up in our
 * $PATH (as Go's exec.LookPath does). 0 with out, or -1 when there is no executable file. */
static int resolve_command(const char *cmd, char *out, size_t cap) {
    if (strchr(cmd, '/')) {
        snprintf(out, cap, "%s", cmd);
        return access(out, X_OK) == 0 ? 0 : -1;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        struct stat st;
        if ((size_t)snprintf(out, cap, "%.*s/%s", (int)(n ? n : 1), n ? path : ".", cmd) < cap &&
            stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
            return 0;
        path += n + (path[n] == ':');
    }
    return -1;
}

int kube_credplugin_run(struct kube_credplugin *p, int stdin_is_terminal, struct kube_exec_credential *out,
                        char *err, size_t errlen) {
    char head[300], exe[4096];
    memset(out, 0, sizeof(*out));
    snprintf(head, sizeof(head), "exec credential plugin \"%.120s\" of user \"%.120s\"", p->command,
             p->user ? p->user : "");
    if (p->interactive == KUBE_INTERACTIVE_ALWAYS && !stdin_is_terminal)
        return errfmt(err, errlen, "%s: interactiveMode Always needs a terminal on stdin, and there is none", head);
    /* Found before forking: a missing plugin is the common failure, and is told apart from
     * a plugin that exits 127 itself. */
    if (resolve_command(p->command, exe, sizeof(exe)) < 0)
        return errfmt_line(err, errlen, "%s: the command was not found or is not executable%s%.300s", head,
                           p->install_hint ? ": " : "", p->install_hint ? p->install_hint : "");
    int give_stdin = p->interactive != KUBE_INTERACTIVE_NEVER && stdin_is_terminal;
    char *info = kube_exec_info(p->api_version, give_stdin, p->cluster_json);
    size_t infolen = info ? strlen(info) + sizeof("KUBERNETES_EXEC_INFO=") : 0;
    char *info_var = info ? malloc(infolen) : NULL;
    char **argv = calloc(p->nargs + 2, sizeof(char *)), **envp = NULL;
    int outp[2] = {-1, -1}, devnull = -1, rc = -1;
    pid_t pid = -1;
    char *buf = NULL;
    size_t len = 0;
    if (!info || !info_var || !argv) {
        errfmt(err, errlen, "%s: out of memory", head);
        goto done;
    }
    snprintf(info_var, infolen, "KUBERNETES_EXEC_INFO=%s", info);
    argv[0] = p->command;
    for (size_t i = 0; i < p->nargs; i++) argv[i + 1] = p->args[i];
    if (!(envp = child_env(p, info_var)) || !(buf = malloc(PLUGIN_OUT_MAX + 1))) {
        errfmt(err, errlen, "%s: out of memory", head);
        goto done;
    }
    if (pipe2(outp, O_CLOEXEC) < 0 || (!give_stdin && (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)) {
        errfmt(err, errlen, "%s: %s", head, strerror(errno));
        goto done;
    }
    pid = fork();
    if (pid < 0) {
        errfmt(err, errlen, "%s: fork: %s", head, strerror(errno));
        goto done;
    }
    if (pid == 0) {
        /* the child: only async-signal-safe calls from here */
        if (dup2(outp[1], 1) < 0 || (devnull >= 0 && dup2(devnull, 0) < 0)) _exit(EXIT_EXEC_FAILED);
        signal(SIGPIPE, SIG_DFL);
        execve(exe, argv, envp);
        _exit(EXIT_EXEC_FAILED);
    }
    close(outp[1]);
    outp[1] = -1;
    /* Read its stdout to EOF (or the limit, or the timeout when it gets no terminal). */
    int64_t deadline = give_stdin ? 0 : clock_mono_ms() + (p->timeout_ms > 0 ? p->timeout_ms : 60000);
    int timed_out = 0, too_big = 0;
    for (;;) {
        int wait_ms = -1;
        if (deadline) {
            int64_t left = deadline - clock_mono_ms();
            if (left <= 0) { timed_out = 1; break; }
            wait_ms = left > 1000 ? 1000 : (int)left;
        }
        struct pollfd pf = {outp[0], POLLIN, 0};
        int r = poll(&pf, 1, wait_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        if (r == 0) continue;
        ssize_t n = read(outp[0], buf + len, PLUGIN_OUT_MAX - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
        if (len >= PLUGIN_OUT_MAX) { too_big = 1; break; }
    }
    if (timed_out || too_big) kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    pid = -1;
    buf[len] = 0;
    if (timed_out) {
        errfmt(err, errlen, "%s: no answer within %g s (it was stopped)", head,
               (double)(p->timeout_ms > 0 ? p->timeout_ms : 60000) / 1000.0);
    } else if (too_big) {
        errfmt(err, errlen, "%s: its output is larger than %zu KiB", head, PLUGIN_OUT_MAX >> 10);
    } else if (WIFSIGNALED(status)) {
        errfmt(err, errlen, "%s: killed by signal %d", head, WTERMSIG(status));
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        errfmt(err, errlen, "%s: exit status %d", head, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    } else {
        char why[400];
        if (kube_exec_credential_parse(buf, len, p->api_version, out, why, sizeof(why)) < 0)
            errfmt(err, errlen, "%s: %s", head, why);
        else
            rc = 0;
    }
done:
    if (outp[0] >= 0) close(outp[0]);
    if (outp[1] >= 0) close(outp[1]);
    if (devnull >= 0) close(devnull);
    if (buf) wipe_free(buf, PLUGIN_OUT_MAX + 1);
    free(argv);
    free(envp);
    free(info);
    free(info_var);
    return rc;
}

/* Copy a credential (deep). 0, or -1 out of memory (dst zeroed). */
static int cred_copy(const struct kube_exec_credential *src, struct kube_exec_credential *dst) {
    memset(dst, 0, sizeof(*dst));
    dst->expires_ms = src->expires_ms;
    dst->generation = src->generation;
    if (src->token && !(dst->token = strdup(src->token))) goto oom;
    if (src->cert_pem) {
        if (!(dst->cert_pem = malloc(src->cert_len + 1)) || !(dst->key_pem = malloc(src->key_len + 1))) goto oom;
        memcpy(dst->cert_pem, src->cert_pem, src->cert_len + 1);
        memcpy(dst->key_pem, src->key_pem, src->key_len + 1);
        dst->cert_len = src->cert_len;
        dst->key_len = src->key_len;
    }
    return 0;
oom:
    kube_exec_credential_free(dst);
    return -1;
}

int kube_credplugin_get(struct kube_credplugin *p, struct kube_exec_credential *out, char *err, size_t errlen) {
    int rc = 0;
    memset(out, 0, sizeof(*out));
    if (p->mu_ready) pthread_mutex_lock(&p->mu);
    if (!p->have || kube_exec_credential_expired(p->cred.expires_ms, kj_now_ms())) {
        struct kube_exec_credential fresh;
        if (kube_credplugin_run(p, isatty(0), &fresh, err, errlen) < 0) {
            rc = -1;
        } else {
            kube_exec_credential_free(&p->cred);
            p->cred = fresh;
            p->cred.generation = ++p->generation;
            p->have = 1;
        }
        p->runs++;
    }
    if (rc == 0 && cred_copy(&p->cred, out) < 0) rc = errfmt_oom(err, errlen);
    if (p->mu_ready) pthread_mutex_unlock(&p->mu);
    return rc;
}

int kube_credplugin_invalidate(struct kube_credplugin *p, unsigned generation) {
    if (p->mu_ready) pthread_mutex_lock(&p->mu);
    if (p->have && p->cred.generation == generation) {
        kube_exec_credential_free(&p->cred);
        p->have = 0;
    }
    if (p->mu_ready) pthread_mutex_unlock(&p->mu);
    return 1;
}

void kube_credplugin_free(struct kube_credplugin *p) {
    if (!p) return;
    if (p->mu_ready) pthread_mutex_destroy(&p->mu);
    kube_exec_credential_free(&p->cred);
    free(p->api_version);
    free(p->command);
    for (size_t i = 0; i < p->nargs; i++) free(p->args[i]);
    free(p->args);
    for (size_t i = 0; i < p->nenv; i++) wipe_free(p->env[i], strlen(p->env[i]));
    free(p->env);
    free(p->install_hint);
    free(p->cluster_json);
    free(p->user);
    memset(p, 0, sizeof(*p));
}
