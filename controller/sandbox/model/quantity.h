/* sandbox/model/quantity.h — pure parsers for the user-facing units of a Sandbox spec:
 * memory ("2g", "2Gi", "512Mi", "1.5G", "1073741824"), cpu ("1.0", "500m", "2") and
 * durations ("90s", "30m", "2h", "1h30m", "500ms"), plus formatting to canonical
 * Kubernetes quantities. Rejects negatives, overflow, junk; no I/O. */
#ifndef YAO_SANDBOX_QUANTITY_H
#define YAO_SANDBOX_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

/* Memory in bytes. Grammar: digits [ "." digits ] unit, at least one digit (".5Gi" and
 * "5." are fine), no sign, no spaces. Units, case-sensitive:
 *   none; Ki Mi Gi Ti Pi Ei (2^10..2^60); k M G T P E (10^3..10^18, Kubernetes' meaning:
 *   "k" is 1000); Docker-style lower-case b m g t = 1, 2^20, 2^30, 2^40 ("2g" = 2 GiB and
 *   "512m" = 512 MiB as Docker means them — Kubernetes' milli makes no sense for bytes);
 *   or a Kubernetes decimal exponent "1e3", "1.5E+3" (exponent 0..18; negative exponents
 *   are rejected). "K", "p", "kb", "GB", "Gib" and the like are rejected.
 * Decimals like "1.5Gi" are computed exactly (integer arithmetic, at most 18 significant
 * fraction digits); a fractional byte is rounded up, as Kubernetes does ("0.1Ki" = 103).
 * 0 ok; the largest value is 2^62 ("4Ei"); negative, empty, junk, overflow → -1. */
int qty_parse_memory(const char *s, int64_t *bytes);
/* CPU in millicores: "1", "1.0", "0.5", ".5", "500m", "2.25", "1e3" (cores with a
 * non-negative decimal exponent). 0 ok. Rejects resolution finer than 1m ("0.0005",
 * "1.5m"), other suffixes, negatives, junk, more than INT64_MAX millicores → -1. */
int qty_parse_cpu(const char *s, int64_t *millicores);
/* Go-style duration: sequence of number+unit (ms, s, m, h), e.g. "1h30m", "90s", "1.5h";
 * a bare "0" is 0 (any other number needs a unit). Go's ns/us/µs and a sign are not
 * accepted. Result in milliseconds; a sub-millisecond remainder of each component is
 * truncated ("1.5ms" = 1), as Go truncates to its own nanosecond resolution. Overflow
 * past INT64_MAX ms, negative, junk → -1. */
int qty_parse_duration(const char *s, int64_t *ms);
/* Canonical quantity strings: bytes → the largest exact binary suffix ("2Gi", "1536Mi"),
 * else plain bytes "1500"; millicores → "1" when a whole number of cores, else "500m".
 * Return 0, or -1 (out = "") if out is too small or the value is negative. */
int qty_format_memory(int64_t bytes, char *out, size_t outlen);
int qty_format_cpu(int64_t millicores, char *out, size_t outlen);
/* A duration in the grammar qty_parse_duration reads back to the same value: whole hours,
 * minutes, seconds and milliseconds, largest first, zero parts left out ("2h", "30m",
 * "1h30m", "90s" is "1m30s", "1500ms" is "1s500ms"; 0 is "0"). 0, or -1 (out = "") if out is
 * too small or ms is negative. */
int qty_format_duration(int64_t ms, char *out, size_t outlen);

#endif
