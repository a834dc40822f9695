/* cli/files.h — the pure, network-free half of the yao-sandbox CLI's file
 * helpers: path handling for sandbox paths, the tar stream that `cp` sends in (a pull-model
 * ustar/pax writer over a local tree: it never holds the archive in memory), the safe tar
 * extractor that `cp` uses for what comes out of a sandbox (it refuses absolute paths,
 * `..`, links that leave the destination, and never follows a symlink while writing),
 * the portable listing script behind `ls`/`stat` and its parser, the remote scripts and
 * messages of `cp`, wrapping a command for `exec -w/-e`, and the small decisions of
 * `exec` (terminal size from the environment, whether the sandbox was stopped
 * under a command, exit codes). Everything here is unit-testable without a
 * cluster (the scripts run locally, under GNU tools and under busybox).
 * The exec transport is kube/exec.c; the Kubernetes calls and the command line are the
 * rest of cli/ (cli/main.c lists its files). */
#ifndef YAO_CLI_FILES_H
#define YAO_CLI_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct dynbuf;

/* One-line notices (a skipped special file, a rejected archive entry). */
typedef void (*cli_note_fn)(void *ud, const char *msg);

/* ---- paths ---------------------------------------------------------------------------- */

/* A sandbox path resolved against base: absolute paths as given, "" → base, a relative
 * path → base + "/" + path. Returns a malloc'd string (caller frees) or NULL on ENOMEM. */
char *cli_path_join(const char *base, const char *path);
/* Split a path into the directory to `tar -C` into and the member name, as dirname and
 * basename do after dropping trailing slashes: "/w/a/" → "/w", "a"; "a" → ".", "a";
 * "/a" → "/", "a". A path ending in "." or ".." (and "/") names its directory as a whole:
 * dir = the path, name = ".". *dir and *name are malloc'd; 0, or -1 on ENOMEM / empty path. */
int cli_path_split(const char *path, char **dir, char **name);
/* Canonical form of a relative archive member name: empty and "." components dropped,
 * components joined by single '/' ("" for the archive root itself, e.g. "./").
 * Returns 0; -1 if the name is absolute, -2 if it has a ".." component, -3 if out is too
 * small (out is then ""). */
int cli_path_clean_rel(const char *in, char *out, size_t outlen);
/* True (1) if a symlink at the clean relative path `entry` with `target` stays inside the
 * tree it is extracted into: target relative and non-empty, every ".." at its start (a ".."
 * after a normal component could climb out through another symlink, so it is refused), and
 * no more leading ".." than the link's directory is deep. 0 otherwise. */
int cli_link_target_inside(const char *entry, const char *target);

/* ---- tar out of a local tree (cp LOCAL SANDBOX:PATH) ------------------------------------ */

/* Append one entry's header(s) to out: a pax 'x' header first when the name does not fit
 * ustar's name/prefix fields, the link target exceeds 100 bytes or the size 8 GiB; then the
 * ustar header (uid/gid 0, no owner names). type: '0' file, '5' directory, '2' symlink,
 * '1' hard link (others as given). The caller writes the data and its padding.
 * 0, or -1 when out's ceiling is reached. */
int cli_tar_header(struct dynbuf *out, const char *name, char type, unsigned mode,
                   uint64_t size, int64_t mtime, const char *linkname);

struct cli_tar_src;
/* An archive of local_path stored under the member name `name` (no leading '/', no ".."):
 * a directory recursively in name order, regular files with their data, symlinks as
 * symlinks, modes kept (set-id bits dropped), owners not. local_path itself is followed if
 * it is a symlink; symlinks below it are not. Sockets, fifos and devices are skipped with a
 * note. NULL with err on failure (local_path missing, bad name, ENOMEM). */
struct cli_tar_src *cli_tar_src_new(const char *local_path, const char *name,
                                    cli_note_fn note, void *ud, char *err, size_t errlen);
/* Fill up to cap bytes of the archive (a file is read only as the archive reaches it).
 * Returns the count, 0 once the archive (with its two zero blocks) is complete, -1 on an
 * error (a file that cannot be read or shrank while being read): cli_tar_src_error says why. */
ssize_t cli_tar_src_read(struct cli_tar_src *s, char *buf, size_t cap);
const char *cli_tar_src_error(const struct cli_tar_src *s);
void cli_tar_src_free(struct cli_tar_src *s);

/* ---- safe extraction (cp SANDBOX:PATH LOCAL) ------------------------------------------- */

struct cli_untar_options {
    const char *dest_dir;   /* an existing directory; nothing is written outside it */
    /* Rename the archive's top member: entries must be `from` or lie below it, and are
     * written as `to` (+ the rest); others are rejected. from "" takes every entry and
     * puts it below `to` (to "" = as is). from NULL: names are kept as they are. */
    const char *from, *to;
    cli_note_fn on_reject;  /* one line per rejected entry (may be NULL) */
    void *ud;
};

/* Streaming extractor: feed it the archive as it arrives. Regular files, directories,
 * symlinks (inside only), hard links (to members inside); ustar prefix, GNU 'L'/'K' long
 * names and pax path/linkpath/size records. Modes are kept (set-id bits dropped; directory
 * modes applied at the end so read-only directories can still be filled), owners and
 * times are not. Entries with absolute paths, "..", a link leaving the destination, a path
 * through a symlink, or an unsupported type are rejected (reported, skipped, counted);
 * extraction goes on with the next entry. */
struct cli_untar;
struct cli_untar *cli_untar_new(const struct cli_untar_options *o, char *err, size_t errlen);
/* 0, or -1 on a fatal error (malformed archive, I/O failure): cli_untar_error says why. */
int cli_untar_feed(struct cli_untar *u, const void *data, size_t len);
/* The archive ended: 0 if it was complete (end-of-archive seen, or input ended cleanly
 * between entries after at least one entry), -1 otherwise. Applies directory modes. */
int cli_untar_finish(struct cli_untar *u);
const char *cli_untar_error(const struct cli_untar *u);
size_t cli_untar_rejected(const struct cli_untar *u);   /* entries rejected */
size_t cli_untar_entries(const struct cli_untar *u);    /* entries written */
void cli_untar_free(struct cli_untar *u);

/* ---- listings (ls / stat) -------------------------------------------------------------- */

/* The listing behind ls and stat, run as `sh -c CLI_LIST_SCRIPT sh MODE PATH` (MODE "ls"
 * or "stat"). Portable: POSIX sh, `stat -c '%f %s %Y'`, `readlink` and globbing — what
 * GNU coreutils and busybox both have (GNU find's -printf, which busybox lacks, is not
 * used). Output, in groups: a count N and '\n'; N times NAME '\0' LINK-TARGET '\0'
 * (the target only for a symlink that is not followed); then N lines "MODE SIZE MTIME"
 * (stat's raw mode in hex, bytes, seconds) in the same order, "-" for an entry that
 * vanished meanwhile. The first group is PATH itself (followed if it is a symlink when
 * MODE is ls); for ls of a directory, its entries follow (names relative to it, hidden
 * ones included). Errors: one line on stderr naming PATH, exit 1; exit 127 with "stat is
 * not available in the sandbox image" when there is no stat. */
extern const char CLI_LIST_SCRIPT[];

struct cli_file_info {
    char *name;        /* base name */
    char *link;        /* symlink target, "" otherwise */
    char type;         /* f d l p s c b, '?' unknown */
    uint64_t size;
    int64_t mtime_ms;
    unsigned mode;     /* permission bits (07777) */
};
/* Parse CLI_LIST_SCRIPT's complete output. The first entry is the listed path, named by
 * its base name (cli_base_name); vanished entries are left out. 0 with a malloc'd array
 * (NULL when n == 0), or -1 when the text is malformed or ENOMEM. */
int cli_listing_parse(const char *buf, size_t len, struct cli_file_info **out, size_t *n);
void cli_file_infos_free(struct cli_file_info *v, size_t n);
/* The name ls shows for a path: its last component ("/" for the root; trailing slashes
 * ignored). malloc'd, NULL on ENOMEM. */
char *cli_base_name(const char *path);
/* "drwxr-xr-x" style string of type + mode into out (>= 11 bytes). */
void cli_mode_string(char type, unsigned mode, char *out);

/* ---- exec -w / -e ---------------------------------------------------------------------- */

/* argv for `exec [-e K=V]... [-w DIR] -- CMD...`, passing every CMD word exactly:
 *   no env, no dir:  CMD...
 *   env only:        env K=V... CMD...   (through `sh -c 'exec "$@"' sh` when CMD[0]
 *                                          contains '=', which env would take as a K=V)
 *   dir:             [env K=V...] sh -c 'cd -- "$0" && exec "$@"' DIR CMD...
 * The array is malloc'd, its strings borrowed from the inputs or static (free only the
 * array). 0, or -1 on ENOMEM or when ncmd is 0 or an env entry is not NAME=VALUE. */
int cli_exec_argv(const char *const *cmd, size_t ncmd, const char *const *env, size_t nenv,
                  const char *workdir, const char ***out, size_t *nout);

/* ---- remote scripts and messages ---------------------------------------------------------- */

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

/* ---- exec ------------------------------------------------------------------------------- */

/* exits with this when the sandbox was stopped, paused, deleted or restarted while the
 * command ran (EX_TEMPFAIL of sysexits.h: running it again starts the sandbox again).
 * Not 137 or 143, which a command killed by SIGKILL or SIGTERM (an OOM kill) gives. */
#define CLI_EXIT_SANDBOX_STOPPED 75

/* A terminal size from $COLUMNS and $LINES (either may be NULL): 0 with both when each is
 * a whole number in 1..65535, else -1. For `exec -t` when stdin is not a terminal. */
int cli_term_size_env(const char *columns, const char *lines, unsigned *width, unsigned *height);

/* What the CLI knows of a Sandbox before and after a command ran. Strings may be NULL. */
struct cli_sandbox_view {
    int gone;              /* 404 */
    int deleting;          /* metadata.deletionTimestamp */
    int paused;            /* spec.paused */
    const char *phase;     /* status.phase */
    const char *reason;    /* the Ready condition's reason */
    const char *pod;       /* status.podName */
    const char *started;   /* status.startedAt: when its pod started */
};
/* Whether the sandbox was stopped under the command: 1 with why ("was stopped while the
 * command ran (reason: Idle)", "was deleted while the command ran", "was restarted while
 * the command ran (its pod was replaced)") — it is gone or being deleted; its phase is
 * Stopping or Stopped, it is paused, or its Ready reason is Idle or Paused; or its pod's
 * name or start time changed — else 0. */
int cli_sandbox_stopped(const struct cli_sandbox_view *before, const struct cli_sandbox_view *after,
                        char *why, size_t whylen);
/* Whether an exec's end calls for a look at the sandbox: the session failed (the stream
 * dropped) or the command died of SIGKILL or SIGTERM (137, 143). */
int cli_exec_check_sandbox(int session_ok, int exit_code);
/* The CLI's exit code for a command's: 0..255 as is, above 255 255, unknown (< 0) 1. */
int cli_exit_code(int exit_code);

/* Write all n bytes to fd, retrying on EINTR and short writes; -1 with errno set. */
int cli_write_all(int fd, const void *data, size_t n);

#endif
