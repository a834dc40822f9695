/* sandbox/quantity.h — pure parsers for the user-facing units of a Sandbox spec:
 * memory ("2g", "2Gi", "512Mi", "1.5G", "1073741824"), cpu ("1.0", "500m", "2") and
 * durations ("90s", "30m", "2h", "1h30m", "500ms"), plus formatting to canonical
 * Kubernetes quantities. Rejects negatives, overflow, junk; no I/O. */
#ifndef YAO_SANDBOX_QUANTITY_H
#define YAO_SANDBOX_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

/* Memory in bytes. Accepts Kubernetes suffixes (Ki Mi Gi Ti Pi Ei, k M G T P E, and
 * lower-case "k"), and the Docker-style lower-case "b k m g t" ("2g" = 2 GiB, as Docker
 * means it) ; decimals like "1.5Gi". 0 ok; negative, empty, overflow > 2^62 → -1. */
int qty_parse_memory(const char *s, int64_t *bytes);
/* CPU in millicores: "1", "1.0", "0.5", "500m", "2.25". "0" invalid? no: 0 ok. Rejects
 * resolution finer than 1m, negatives, junk → -1. */
int qty_parse_cpu(const char *s, int64_t *millicores);
/* Go-style duration: sequence of number+unit (ms, s, m, h), e.g. "1h30m", "90s", "1.5h";
 * a bare "0" is 0. Result in milliseconds; overflow, negative, junk → -1. */
int qty_parse_duration(const char *s, int64_t *ms);
/* Canonical quantity strings: bytes → e.g. "2Gi" when exact, else plain bytes "1500";
 * millicores → "1" when a whole number of cores, else "500m". Return 0 or -1 if too small. */
int qty_format_memory(int64_t bytes, char *out, size_t outlen);
int qty_format_cpu(int64_t millicores, char *out, size_t outlen);

#endif
