#!/usr/bin/env bash
# Chaos, short form (make test): Sandboxes churned while the controller is SIGKILLed and
# restarted, the API server is restarted and etcd is paused; then invariants. The long
# form is `make chaos` (tests/chaos/run). Set CHAOS_SEED to replay a run.
. "$(dirname "$0")/lib.sh"
NS=yao-it
install_manifests
fresh_namespace $NS
KC=$YAO_PLANE_DIR/chaos-sa.kubeconfig
sa_kubeconfig "$KC"
python3 "$SRC_DIR/tests/chaos/chaos.py" --plane "$YAO_PLANE_DIR" --controller "$BUILD_DIR/bin/yao-sandbox-controller" \
    --controller-kubeconfig "$KC" --namespace $NS --sandboxes "${CHAOS_SANDBOXES:-40}" \
    --duration "${CHAOS_DURATION:-45}" --controller-kills 5 --converge-timeout 90 \
    --log "$BUILD_DIR/test-chaos-controller.log" ${CHAOS_SEED:+--seed $CHAOS_SEED}
