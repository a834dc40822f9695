/* sandbox/cli_files.h — the pure, network-free half of the yao-sandbox CLI's file
 * helpers: path handling for sandbox paths, the tar stream that `cp` sends in (a pull-model
 * ustar/pax writer over a local tree: it never holds the archive in memory), the safe tar
 * extractor that `cp` uses for what comes out of a sandbox (it refuses absolute paths,
 * `..`, links that leave the destination, and never follows a symlink while writing),
 * parsing the `find -printf` listing behind `ls`/`stat`, and wrapping a command for
 * `exec -w/-e`. Everything here is unit-testable against a temporary directory.
 * The exec transport, the Kubernetes calls and the command line live in cmd/cli_main.c. */
#ifndef YAO_SANDBOX_CLI_FILES_H
#define YAO_SANDBOX_CLI_FILES_H

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

/* The find(1) format the CLI asks for (GNU find; sandbox images are Debian-based): per
 * entry "TYPE SIZE MTIME MODE NAME\0LINK\0" — %y %s %T@ %m %f, then %l. */
#define CLI_FIND_PRINTF "%y %s %T@ %m %f\\0%l\\0"

struct cli_file_info {
    char *name;        /* base name */
    char *link;        /* symlink target, "" otherwise */
    char type;         /* find %y: f d l p s c b, '?' unknown */
    uint64_t size;
    int64_t mtime_ms;
    unsigned mode;     /* permission bits (07777) */
};
/* Parse a complete listing. 0 with a malloc'd array (NULL when n == 0), or -1 when the
 * text is malformed or ENOMEM. */
int cli_ls_parse(const char *buf, size_t len, struct cli_file_info **out, size_t *n);
void cli_file_infos_free(struct cli_file_info *v, size_t n);
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

/* Write all n bytes to fd, retrying on EINTR and short writes; -1 with errno set. */
int cli_write_all(int fd, const void *data, size_t n);

#endif
