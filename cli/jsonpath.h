/* cli/jsonpath.h — the kubectl JSONPath templates of `-o jsonpath=...`, compiled once and
 * rendered against JSON objects. Pure: no I/O.
 *
 * The subset users write with kubectl: literal text, and in braces
 *   {.a.b}  {$.a}  {.a['k.with.dots']}  {.items[0]}  {.items[-1]}  {.items[1:3]}
 *   {.items[*].metadata.name}  {.a.*}  {..name} (recursive descent)
 *   {.items[?(@.status.phase=="Running")].metadata.name}  (==, !=, <, <=, >, >=, or @.x
 *   alone for "exists"; the right side a quoted string, a number, true, false)
 *   {range .items[*]}...{end}  (nestable; inside, paths are relative to the item)
 *   {"quoted\ttext\n"}  ({'...'} too: \n \t \r \\ \" \' escapes)
 * Outside braces text is copied as is. The results of one expression are joined by one
 * space; strings print raw, numbers and booleans as JSON, objects and arrays as compact
 * JSON; a key that is missing prints nothing (kubectl get's allowMissingKeys). */
#ifndef YAO_CLI_JSONPATH_H
#define YAO_CLI_JSONPATH_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/dynbuf.h"

struct jsonpath;

/* Compile a template. 0 with *out (free with jsonpath_free), or -1 with err saying what
 * is wrong and where ("at offset N"). */
int jsonpath_compile(const char *tmpl, struct jsonpath **out, char *err, size_t errlen);
/* Append the template rendered against root to out. 0, or -1 when out of memory. */
int jsonpath_render(const struct jsonpath *jp, const cJSON *root, struct dynbuf *out);
void jsonpath_free(struct jsonpath *jp);

#endif
