/* cli/remote.c — the shell the CLI runs in a sandbox (see remote.h): cp's checks and its
 * tar out, the wrapper of commands that read stdin, and the one-line message of a failed
 * remote command. */
#include "cli/remote.h"

#include <stdio.h>
#include <string.h>

/* tar as a direct exec finds it: an executable file in a PATH directory (cp in runs tar
 * without a shell). `command -v` would not do: a busybox shell built to run its applets
 * answers "tar" for an applet that has no link, which no direct exec could run. */
#define CP_FIND_TAR                                                                     \
    "t=;IFS=:;for d in $PATH;do [ -f \"${d:-.}/tar\" ]&&[ -x \"${d:-.}/tar\" ]&&{ t=${d:-.}/tar;break;};done;unset IFS\n" \
    "[ -n \"$t\" ]||{ echo 'tar is not available in the sandbox image' >&2;exit 127;}\n"

const char CLI_STDIN_CHILD[] = "\"$@\"; exit $?";

const char CLI_CP_IN_CHECK[] =
    CP_FIND_TAR
    "if [ -d \"$1\" ];then echo dir\n"
    "elif [ -d \"$2\" ];then echo new\n"
    "else printf '%s: no such directory in the sandbox\\n' \"$2\" >&2;exit 1\n"
    "fi\n";

const char CLI_CP_OUT_SCRIPT[] =
    CP_FIND_TAR
    "[ -e \"$1/$2\" ]||[ -L \"$1/$2\" ]||{ printf '%s: no such file or directory in the sandbox\\n' \"$3\" >&2;exit 2;}\n"
    "exec \"$t\" -cf - -C \"$1\" \"$2\"\n";

/* A line that only sums up earlier ones (GNU tar's closing words). */
static int summary_line(const char *l) {
    static const char *const sums[] = {"Error is not recoverable", "Exiting with failure status",
                                       "Error exit delayed from previous errors"};
    for (size_t i = 0; i < sizeof(sums) / sizeof(*sums); i++)
        if (strstr(l, sums[i])) return 1;
    return 0;
}

/* Whether p[0..n) names a program whose "NAME: " starts its complaints — the tools the
 * CLI runs, and the shells (a path such as "x: No such file" is no program). */
static int known_program(const char *p, size_t n) {
    static const char *const progs[] = {"tar", "sh", "dash", "bash", "ash", "busybox", "cat", "mkdir", "rm",
                                        "stat", "readlink", "dirname", "env", "find", "ls"};
    for (size_t i = 0; i < sizeof(progs) / sizeof(*progs); i++)
        if (strlen(progs[i]) == n && !strncmp(p, progs[i], n)) return 1;
    return 0;
}

/* The first meaningful stderr line (see header). */
void cli_remote_message(const char *buf, size_t len, char *out, size_t outlen) {
    if (!outlen) return;
    out[0] = '\0';
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - buf) : len;
        const char *l = buf + pos;
        size_t n = end - pos;
        pos = end + 1;
        while (n && (*l == ' ' || *l == '\t')) { l++; n--; }
        while (n && (l[n - 1] == '\r' || l[n - 1] == ' ' || l[n - 1] == '\t')) n--;
        if (!n) continue;
        char line[1024];
        if (n >= sizeof(line)) n = sizeof(line) - 1;
        memcpy(line, l, n);
        line[n] = '\0';
        if (summary_line(line)) continue;
        char *p = line;
        size_t k = strcspn(p, ":");
        if (p[k] == ':' && p[k + 1] == ' ' && known_program(p, k)) {
            p += k + 2;                                           /* "tar: ", "sh: " */
            k = strspn(p, "0123456789");
            if (k && p[k] == ':' && p[k + 1] == ' ') p += k + 2;  /* dash's "1: " */
        }
        snprintf(out, outlen, "%s", p);
        return;
    }
}
