/* sandbox/model/selector.h — Kubernetes label selectors (metav1.LabelSelector: matchLabels and
 * matchExpressions with In, NotIn, Exists, DoesNotExist) as the API server means them:
 * validating one and matching it against an object's labels. Pure: no I/O. Used for a
 * SandboxClass's spec.allowedNamespaces.selector (sandbox/decide/class_decide.c). */
#ifndef YAO_SANDBOX_SELECTOR_H
#define YAO_SANDBOX_SELECTOR_H

#include <stddef.h>
#include <cjson/cJSON.h>

/* Is sel a well-formed LabelSelector (an object with only matchLabels: {string: string}
 * and matchExpressions: [{key, operator, values}]; In/NotIn need values, Exists and
 * DoesNotExist take none)? 0, or -1 with a message naming field in err. */
int sbx_selector_validate(const cJSON *sel, const char *field, char *err, size_t errlen);

/* Does the validated selector sel select labels (an object of string values; NULL = no
 * labels)? An empty selector ({}) selects everything, as the API server has it. 1 or 0. */
int sbx_selector_matches(const cJSON *sel, const cJSON *labels);

#endif
