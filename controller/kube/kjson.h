/* kube/kjson.h — small helpers over cJSON for Kubernetes objects: dotted-path lookups
 * ("metadata.labels"), typed getters with defaults, and RFC 3339 timestamps (the API's
 * metav1.Time / MicroTime) to and from milliseconds since the epoch. No I/O. */
#ifndef YAO_KUBE_KJSON_H
#define YAO_KUBE_KJSON_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

/* Item at a '.'-separated path of object keys (no array indexing), or NULL. Keys that
 * contain dots cannot be reached this way: use cJSON_GetObjectItemCaseSensitive. */
const cJSON *kj_path(const cJSON *obj, const char *path);
/* The member key of obj (one key, dots allowed), or NULL when absent or JSON null: for
 * fields where null means "not given". */
const cJSON *kj_member(const cJSON *obj, const char *key);
/* String at path, or NULL. */
const char *kj_str(const cJSON *obj, const char *path);
/* Number at path, or def. */
int64_t kj_int(const cJSON *obj, const char *path, int64_t def);
/* Boolean at path, or def. */
int kj_bool(const cJSON *obj, const char *path, int def);
/* Value of one key of the map at path (labels, annotations), or NULL. */
const char *kj_map_get(const cJSON *obj, const char *path, const char *key);
/* The first of obj's status.conditions whose type is type (any kind: Pod, Sandbox,
 * PersistentVolumeClaim...), or NULL. */
const cJSON *kj_condition(const cJSON *obj, const char *type);

/* A list's metadata (any kind's List): its resourceVersion, to watch from, and its continue
 * token, for the next page. The strings point into the list; NULL when absent. */
struct kube_list_meta {
    const char *resource_version;
    const char *continue_;
};
void kube_list_meta_read(const cJSON *list, struct kube_list_meta *out);

/* Drop metadata.managedFields and the last-applied annotation of obj (what no reader of a
 * cached object needs): the informers' default transform. */
void kj_strip_metadata(cJSON *obj);

/* Parse RFC 3339 ("2026-11-29T10:00:00Z", fractional seconds and offsets allowed) into
 * milliseconds since the epoch. 0 or -1. */
int kj_time_parse(const char *s, int64_t *ms);
/* Format as "2006-01-02T15:04:05Z" (metav1.Time, whole seconds). out >= 32 bytes. */
void kj_time_format(int64_t ms, char *out, size_t outlen);
/* Format as MicroTime "2006-01-02T15:04:05.000000Z". out >= 40 bytes. */
void kj_time_format_micro(int64_t ms, char *out, size_t outlen);
/* Wall-clock milliseconds since the epoch (plus the offset below). */
int64_t kj_now_ms(void);
/* For tests: kj_now_ms runs offset_ms ahead of the wall clock from now on (0: the wall
 * clock itself), so a test can let a grace period or an idle timeout pass at once. */
void kj_now_offset_set(int64_t offset_ms);

#endif
