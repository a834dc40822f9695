/* cli/output.h — how the CLI prints: kubectl-style ages and JSON, block YAML, aligned
 * tables, durations in messages, and the check of -o against a command's formats. */
#ifndef YAO_CLI_OUTPUT_H
#define YAO_CLI_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Human age like kubectl: 45s, 3m20s, 25m, 3h20m, 20h, 3d4h, 30d, 2y. */
void out_human_age(int64_t ms, char *out, size_t n);
/* Print a JSON value to stdout, indented four spaces a level as kubectl does. 0, or 1 when
 * stdout fails (error printed). */
int out_json(const cJSON *v);
/* Print a JSON value as block-style YAML to stdout. 0, or 1 when stdout fails. */
int out_yaml(const cJSON *v);
/* A duration for messages: "120s", "1500ms". */
void out_duration(int64_t ms, char *out, size_t n);
/* "-" for a missing value in tables and summaries. */
const char *out_or_dash(const char *s);
/* Check -o against the formats a command accepts ("json,yaml"); "jsonpath" in allowed
 * accepts jsonpath=TEMPLATE, compiled here so a bad one is a usage error naming what is
 * wrong. 0, or 2 (usage error printed). NULL (no -o) passes. */
int out_check_format(const char *o, const char *allowed);
/* 1 when -o is jsonpath=TEMPLATE. */
int out_is_jsonpath(const char *o);
/* Print v through -o jsonpath=TEMPLATE (checked by out_check_format). 0, or 1 (error
 * printed). */
int out_jsonpath(const char *o, const cJSON *v);

/* A table of ncols (at most 16) columns, printed with aligned columns. w: the widths
 * printed so far (out_table_flush keeps them, so rows printed later line up). */
struct out_table { char **cells; size_t ncols, nrows, cap; size_t w[16]; };
/* Append a row of ncols cells (copied; NULL prints as ""). Exits 1 out of memory. */
void out_table_add(struct out_table *t, const char *const *row);
/* Print the table to stdout and release it. */
void out_table_print_free(struct out_table *t);
/* Print the rows added so far (columns at least as wide as any printed before) and drop
 * them; the table stays usable. */
void out_table_flush(struct out_table *t);

#endif
