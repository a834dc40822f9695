/* cli/remote.h — the shell the CLI runs in a sandbox for cp and for commands that read
 * stdin, and the one-line message of a failed remote command. Pure text: the scripts run
 * locally, under GNU tools and under busybox, in test_cli_remote.c. */
#ifndef YAO_CLI_REMOTE_H
#define YAO_CLI_REMOTE_H

#include <stddef.h>

/* Commands that read the exec's stdin run as a child of a shell that waits for them:
 * `sh -c CLI_STDIN_CHILD sh CMD ARGS...` (exit status passed through). Measured on a real
 * node (containerd 1.6.20 + runc 1.1.5): the process an exec starts, when it reads stdin
 * itself, sees end-of-file early — `dd`, `cat`, `tar` got 0 to 262144 of 1000000 bytes
 * and exited 0, with kubectl as with us — while a child of that process reads it whole.
 * (`sh -c 'cat > F'` was only safe where sh happens not to exec its last command.) */
extern const char CLI_STDIN_CHILD[];

/* cp into a sandbox, before anything is sent: `sh -c CLI_CP_IN_CHECK sh DEST PARENT`.
 * Prints "dir" when DEST is a directory (the copy goes inside it), "new" when DEST's
 * PARENT is one (the copy is named DEST); otherwise exit 1 with "PARENT: no such
 * directory in the sandbox" on stderr. Exit 127 with "tar is not available in the sandbox
 * image" when no PATH directory holds an executable tar (cp in runs it without a shell;
 * a busybox applet without its link does not count). */
extern const char CLI_CP_IN_CHECK[];
/* cp out of a sandbox: `sh -c CLI_CP_OUT_SCRIPT sh DIR MEMBER SHOWN` writes the tar of
 * DIR/MEMBER to stdout with the tar found as above; exit 127 (no tar), or 2 with "SHOWN:
 * no such file or directory in the sandbox" before tar runs when DIR/MEMBER does not
 * exist. */
extern const char CLI_CP_OUT_SCRIPT[];

/* The remote command's complaint as one line: the first meaningful line of its stderr —
 * blank lines and tar's closing summaries ("Error is not recoverable: exiting now",
 * "Exiting with failure status due to previous errors") skipped — without the "prog: "
 * of the tools the CLI runs and of the shells, and sh's "N: " after it ("tar: ", "sh: 1: ";
 * a line starting with a path keeps it). out is "" when there is none. */
void cli_remote_message(const char *buf, size_t len, char *out, size_t outlen);

#endif
