/* cli/listing.h — what ls and stat show of a sandbox path, without a cluster: the portable
 * listing script they run in the sandbox, the parser of its output, and the mode string.
 * The script is run locally under GNU tools and busybox by test_cli_remote.c; the command
 * is cmd_files.c. */
#ifndef YAO_CLI_LISTING_H
#define YAO_CLI_LISTING_H

#include <stddef.h>
#include <stdint.h>

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
/* "drwxr-xr-x" style string of type + mode into out (>= 11 bytes). */
void cli_mode_string(char type, unsigned mode, char *out);

#endif
