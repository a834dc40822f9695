/* cli/paths.h — sandbox and archive paths for the CLI's file commands, pure string work:
 * a sandbox path against the working directory, the `tar -C DIR NAME` split, canonical
 * archive member names, whether a symlink stays inside the tree it is extracted into, and
 * the base name ls shows. Used by the tar writer and extractor (tar.h), the listings
 * (listing.h) and the commands (cmd_files.c, cmd_cp.c, session.c). */
#ifndef YAO_CLI_PATHS_H
#define YAO_CLI_PATHS_H

#include <stddef.h>

/* A sandbox path resolved against base: absolute paths as given, "" → base, a relative
 * path → base + "/" + path. Returns a malloc'd string (caller frees) or NULL on ENOMEM. */
char *cli_path_join(const char *base, const char *path);
/* a + "/" + b, without a doubled slash when a ends in one ("" a gives b). malloc'd, NULL
 * on ENOMEM. */
char *cli_path_append(const char *a, const char *b);
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
/* The name ls shows for a path: its last component ("/" for the root; trailing slashes
 * ignored). malloc'd, NULL on ENOMEM. */
char *cli_base_name(const char *path);

#endif
