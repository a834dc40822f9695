/* sandbox/model/naming.h — pure naming rules: the pod name `yao-sb-<user>-<chat>` as a valid
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
 * "yao-sb-<u>-<c>-<hash>": u and c are the IDs lower-cased (ASCII only), every byte
 * outside [a-z0-9] (UTF-8 included) mapped to '-', runs of '-' collapsed, '-' trimmed at
 * both ends ("x" if that leaves nothing), each shortened so the whole fits in 63 chars
 * (u and c share 46: a side needing no more than 23 keeps its length and the other gets
 * the rest, two longer sides get 23 each; a '-' left at the cut is trimmed), and hash is
 * sbx_short_hash(user + '\0' + chat). A plain name has exactly two segments after the
 * prefix and a hashed one at least three, so two different pairs never share a name
 * (short of a 32-bit hash collision between two hashed names, which the controller
 * reports as NameConflict). Returns 0, or -1 (out = "" when it has room) if user or chat
 * is empty/NULL, out is too small, or hashing fails (ENOMEM). */
int sbx_name_pod(const char *user, const char *chat, char *out, size_t outlen);

/* Sanitised Kubernetes label value (<= 63 chars, [A-Za-z0-9._-], alnum at both ends, may be
 * empty). A valid value is copied unchanged (case kept). Otherwise each run of disallowed
 * bytes becomes one '-', non-alnum ends are trimmed, the body is cut to 54 chars and
 * suffixed with "-" + sbx_short_hash(in) so different inputs stay distinguishable (just
 * the 8 hex chars when no body is left). out >= 64 bytes; "" for a NULL in, a smaller
 * out, or ENOMEM while hashing. */
void sbx_label_value(const char *in, char *out, size_t outlen);

/* The one pair of DNS-1123 validators, as Kubernetes' IsDNS1123Label/IsDNS1123Subdomain:
 * a label is 1-63 of [a-z0-9-], alphanumeric at both ends (namespaces, Services); a
 * subdomain is at most 253 characters of dot-separated labels, each alphanumeric at both
 * ends (object names: Sandboxes, classes, Secrets, Events; hostnames). 1 yes, 0 no (also
 * for NULL). */
int sbx_is_dns_label(const char *s);
int sbx_is_dns_subdomain(const char *s);

/* 8 lowercase hex chars of SHA-256(data). out >= 9 bytes ("" only on ENOMEM). */
void sbx_short_hash(const void *data, size_t len, char *out);

#endif
