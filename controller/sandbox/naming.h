/* sandbox/naming.h — pure naming rules: the pod name `yao-sb-<user>-<chat>` as a valid
 * DNS-1123 label, label values, and the stable hash that keeps two different (user, chat)
 * pairs from ever sharing a name. No I/O. */
#ifndef YAO_SANDBOX_NAMING_H
#define YAO_SANDBOX_NAMING_H

#include <stddef.h>

#define SBX_NAME_MAX 63      /* DNS-1123 label */
#define SBX_LABEL_VALUE_MAX 63

/* Writes the pod name for (user, chat) into out (>= 64 bytes).
 * Plain form "yao-sb-<user>-<chat>" only when both IDs are already non-empty runs of
 * [a-z0-9] (no '-') and the whole fits in 63 chars. Otherwise
 * "yao-sb-<u>-<c>-<hash>": u and c are the IDs lower-cased, every character outside
 * [a-z0-9] mapped to '-', runs of '-' collapsed, '-' trimmed at both ends ("x" if that
 * leaves nothing), each shortened so the whole fits in 63 chars, and hash is
 * sbx_short_hash(user + '\0' + chat). A plain name has exactly two segments after the
 * prefix and a hashed one at least three, so two different pairs never share a name
 * (short of a 32-bit hash collision between two hashed names, which the controller
 * reports as NameConflict). Returns 0, or -1 if user or chat is empty/NULL or out is too
 * small. */
int sbx_name_pod(const char *user, const char *chat, char *out, size_t outlen);

/* Sanitised Kubernetes label value (<= 63 chars, [A-Za-z0-9._-], alnum at both ends, may be
 * empty). If the value had to change, it is shortened and suffixed with "-" + 8 hex chars
 * of its SHA-256 so different inputs stay distinguishable. out >= 64 bytes. */
void sbx_label_value(const char *in, char *out, size_t outlen);

/* True if s is a valid DNS-1123 label. */
int sbx_is_dns_label(const char *s);

/* 8 lowercase hex chars of SHA-256(data). out >= 9 bytes. */
void sbx_short_hash(const void *data, size_t len, char *out);

#endif
