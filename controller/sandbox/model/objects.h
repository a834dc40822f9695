/* sandbox/model/objects.h — small pure helpers on the Kubernetes objects the controller reads and
 * writes, shared by every part of sandbox/: API paths of the kinds it owns, RFC 3339
 * timestamps written to objects, the metadata of any object (struct sbx_meta). No
 * controller state, no I/O: they sit below the controller, its pass and every subsystem. */
#ifndef YAO_SANDBOX_OBJECTS_H
#define YAO_SANDBOX_OBJECTS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Collection path of a resource the controller owns in ns (NULL: all namespaces): a core
 * one ("pods", "persistentvolumeclaims", "services"), or "networkpolicies"
 * (networking.k8s.io/v1). */
void sbx_core_path(char *out, size_t n, const char *ns, const char *resource);
/* The path of one object of such a resource: the collection's path and /name. */
void sbx_object_path(char *out, size_t n, const char *ns, const char *resource, const char *name);
/* Add an RFC 3339 timestamp member k to o (nothing when ms is 0 or less). */
void sbx_add_time_ms(cJSON *o, const char *k, int64_t ms);

/* The metadata the controller reads of any object, read once (sbx_meta_read). The strings
 * and maps point into the object it was read from and live as long as it does; nothing is
 * copied. A member of the wrong JSON type reads as absent. */
struct sbx_meta {
    const char *namespace_, *name, *uid, *resource_version;   /* NULL when absent */
    int64_t generation;                 /* 0 when absent */
    int64_t created_ms;                 /* creationTimestamp; 0 when absent or unparseable */
    int deleting;                       /* deletionTimestamp is set */
    const char *created_text, *deletion_text;   /* the two timestamps as written, or NULL */
    const cJSON *labels, *annotations;  /* the maps (JSON objects), or NULL */
    /* The uid of its controller ownerReference (any kind), and the name and uid of that
     * reference when it is a Sandbox of this API group (sbx_sandbox_controller_ref). */
    const char *controller_uid, *sandbox_owner, *sandbox_owner_uid;
    const cJSON *owner_refs;            /* every ownerReference (a JSON array), or NULL */
};
/* Read obj's metadata into m (all absent when obj is NULL). */
void sbx_meta_read(const cJSON *obj, struct sbx_meta *m);
/* The string value of one annotation or label key (dots allowed), or NULL. */
const char *sbx_meta_annotation(const struct sbx_meta *m, const char *key);
const char *sbx_meta_label(const struct sbx_meta *m, const char *key);

#endif
