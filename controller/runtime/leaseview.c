/* runtime/leaseview.c — a Lease read into a typed view (see leaseview.h). */
#include "runtime/leaseview.h"

#include <string.h>

#include "kube/kjson.h"

void kube_lease_view_read(const cJSON *lease, struct kube_lease_view *v) {
    memset(v, 0, sizeof(*v));
    if (!lease) return;
    const cJSON *spec = kj_path(lease, "spec");
    v->name = kj_str(lease, "metadata.name");
    v->holder = kj_str(spec, "holderIdentity");
    v->renew_time = kj_str(spec, "renewTime");
    v->acquire_time = kj_str(spec, "acquireTime");
    if (!v->renew_time || kj_time_parse(v->renew_time, &v->renewed_ms) < 0) v->renewed_ms = 0;
    v->duration_ms = kj_int(spec, "leaseDurationSeconds", 0) * 1000;
    v->transitions = kj_int(spec, "leaseTransitions", 0);
}

int kube_lease_held_at(const struct kube_lease_view *v, int64_t now_ms) {
    return v->holder && *v->holder && v->renewed_ms > 0 && v->renewed_ms + v->duration_ms >= now_ms;
}
