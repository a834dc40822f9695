/* sandbox/decide/shapes.h — the informer transforms of the PVC and Service caches: each object is
 * cut to what the controller reads before it is stored (managedFields and the
 * last-applied annotation go too, kj_strip_metadata), so the caches stay small.
 * Pure. */
#ifndef YAO_SANDBOX_SHAPES_H
#define YAO_SANDBOX_SHAPES_H

#include <cjson/cJSON.h>

/* Keep only metadata, spec.storageClassName, the storage request, status.phase and the
 * storage capacity of a PVC. */
void sbx_pvc_shrink(cJSON *pvc);
/* Keep only metadata and what the controller compares or reports of a Service: its
 * ports, selector and clusterIP. */
void sbx_service_shrink(cJSON *svc);

#endif
