/* cli/tar.h — the CLI's tar code, network-free: the stream `cp` sends into a sandbox (a
 * pull-model ustar/pax writer over a local tree: it never holds the archive in memory;
 * tar_write.c) and the safe extractor `cp` uses for what comes out of one (it refuses
 * absolute paths, `..`, links that leave the destination, and never follows a symlink
 * while writing; tar_read.c). The remote side (which tar, where) is remote.h; the
 * sessions that carry the bytes are cmd_cp.c and session.c. */
#ifndef YAO_CLI_TAR_H
#define YAO_CLI_TAR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct dynbuf;

/* One-line notices (a skipped special file, a rejected archive entry). */
typedef void (*cli_note_fn)(void *ud, const char *msg);

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

#endif
