#!/usr/bin/env bash
# Images pulled from a real registry on the real node: the plane's registries
# (tests/cluster/registry: distribution v3, TLS from the plane's CA, htpasswd auth) and the
# node's containerd pulling from them (its config_path with the CA; the node's own credential
# for the plane's registry). Tested as a user meets it: the default sandbox image comes
# from the registry with no imagePullSecrets and nothing is imported into containerd by
# hand; a pull by digest (image@sha256:…); a private image on a registry the node has no
# credential for, refused without a Secret and pulled with the imagePullSecrets of its
# SandboxClass (spec.image.pullSecrets); a wrong tag and wrong credentials each shown in
# the Sandbox's status with the kubelet's reason and message; the pull policy our pods get
# per image (a version tag and a digest IfNotPresent, ":latest" Always), and that it is
# right for a registry: a ":latest" moved in the registry reaches the next pod.
. "$(dirname "$0")/lib.sh"
use_real_node
NS=yao-node-registry
LOG=$BUILD_DIR/test-node-registry.log
: > "$LOG"
WORK=$(mktemp -d)
on_exit "rm -rf $WORK"
PKI=$YAO_PLANE_DIR/pki
PRIV_DIR=$YAO_PLANE_DIR/registry/private
PRIVATE=$(cat "$PRIV_DIR/address")
RUN=r$(date +%s)   # tags of this run: new to the node, so each case really pulls
ctr_() { ctr --address "$YAO_PLANE_DIR/node/containerd/containerd.sock" -n k8s.io "$@"; }
field() { kubectl -n $NS get sandbox "$1" -o jsonpath="{$2}" 2>/dev/null; }
ready_reason() { field "$1" '.status.conditions[?(@.type=="Ready")].reason'; }
ready_message() { field "$1" '.status.conditions[?(@.type=="Ready")].message'; }
pod_of() { field "$1" .status.podName; }
pod_field() { kubectl -n $NS get pod "$(pod_of "$1")" -o jsonpath="{$2}" 2>/dev/null; }
pod_events() { # sandbox reason — the messages of the kubelet's events of that reason on its pod
    kubectl -n $NS get events --field-selector "involvedObject.name=$(pod_of "$1"),reason=$2" \
        -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' 2>/dev/null
}
sandbox() { # name [extra spec yaml lines...]
    local name=$1; shift
    {
        printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\n' "$name"
        printf 'spec:\n  userID: reg-user\n  chatID: %s\n  lifecycle: persistent\n' "$name"
        printf '  %s\n' "$@"
    } | kubectl -n $NS apply -f - >/dev/null
}
pull_failed() { case $(ready_reason "$1") in ErrImagePull|ImagePullBackOff) return 0 ;; esac; return 1; }

check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4

# --- the registries themselves ---------------------------------------------------------------
check "the plane's registry serves TLS with a certificate of the plane's CA" \
    curl -sf -o /dev/null --cacert "$PKI/ca.crt" -u "$(cat "$YAO_PLANE_DIR/registry/plane/user"):$(cat "$YAO_PLANE_DIR/registry/plane/password")" "https://$NODE_REGISTRY/v2/"
check "  which a client without that CA refuses" eq "$(curl -s -o /dev/null -w '%{http_code}' "https://$NODE_REGISTRY/v2/"; echo " rc=$?")" "000 rc=60"
check "  and anonymous requests get 401 with a Basic challenge (htpasswd)" contains \
    "$(curl -s -D - -o /dev/null --cacert "$PKI/ca.crt" "https://$NODE_REGISTRY/v2/" | tr -d '\r' | tr A-Z a-z)" 'www-authenticate: basic realm='
check "a wrong password is refused too" eq \
    "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$PKI/ca.crt" -u "yao:wrong" "https://$NODE_REGISTRY/v2/")" 401

# --- the default image: from the registry, with the node's own credential ----------------------
sandbox plain
check "a Sandbox with the default image reaches Running" eventually 120 phase_is $NS plain Running
check "  its pod runs the sandbox image of the plane's registry" eq "$(pod_field plain '.spec.containers[0].image')" "$NODE_SANDBOX_IMAGE"
check "  with no imagePullSecrets (the node has the registry's credential)" eq "$(pod_field plain '.spec.imagePullSecrets')" ""
images=$(ctr_ images ls -q)
check "  containerd has it under the registry's name (pulled from there: nothing else gives that name)" \
    grep -qx "$NODE_SANDBOX_IMAGE" <<<"$images"
check "containerd's images are the registry's: the pause image among them" contains "$images" "$NODE_REGISTRY/yao-sandbox/pause:1.0"
check "  and none imported by hand (no docker.io/yao-sandbox/*)" eq "$(grep -c '^docker.io/yao-sandbox/' <<<"$images")" 0

# --- pull by digest ------------------------------------------------------------------------------
ACCEPT='application/vnd.oci.image.manifest.v1+json,application/vnd.docker.distribution.manifest.v2+json,application/vnd.oci.image.index.v1+json'
DIGEST=$(curl -sf -I --cacert "$PKI/ca.crt" -H "Accept: $ACCEPT" \
    -u "$(cat "$YAO_PLANE_DIR/registry/plane/user"):$(cat "$YAO_PLANE_DIR/registry/plane/password")" \
    "https://$NODE_REGISTRY/v2/yao-sandbox/sandbox/manifests/$IMAGE_TAG" | tr -d '\r' |
    awk -F': ' 'tolower($1) == "docker-content-digest" { print $2 }')
check "the registry names the sandbox image's digest" contains "$DIGEST" "sha256:"
BY_DIGEST=$NODE_REGISTRY/yao-sandbox/sandbox@$DIGEST
# Not on the node under that name yet (an earlier run pulled it): the kubelet must pull it.
ctr_ images rm "$BY_DIGEST" >/dev/null 2>&1
sandbox digest "image: \"$BY_DIGEST\""
check "a Sandbox with image@sha256:… reaches Running" eventually 120 phase_is $NS digest Running
check "  its pod: that image, IfNotPresent (a digest names one image forever)" eq \
    "$(pod_field digest '.spec.containers[0].image') $(pod_field digest '.spec.containers[0].imagePullPolicy')" "$BY_DIGEST IfNotPresent"
check "  the kubelet pulled it (event Pulled: Successfully pulled)" eventually 20 sh -c \
    "kubectl -n $NS get events --field-selector involvedObject.name=$(pod_of digest),reason=Pulled -o jsonpath='{.items[*].message}' | grep -q 'Successfully pulled image \"$BY_DIGEST\"'"
check "  and runs exactly that digest" contains "$(pod_field digest '.status.containerStatuses[0].imageID')" "@$DIGEST"

# --- a small image of our own for the rest: FROM scratch + static busybox ------------------------
bb=$(buildah from scratch)
buildah copy "$bb" /bin/busybox /bin/busybox >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/busybox mkdir -p /usr/bin /sbin /usr/sbin /tmp /workspace >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/busybox --install -s >/dev/null
buildah run --isolation=chroot "$bb" -- /bin/sh -c 'chmod 1777 /tmp; chown 1000:1000 /workspace; echo 1 > /variant' >/dev/null
buildah commit -q "$bb" localhost/yao-sandbox/busybox-registry:1 >/dev/null
# (A different size, not only content: once the second image came out with the very layer
# of the first — /variant still "1" under a new image digest — as a layer diff that
# compares size and mtime would make it when both are equal within the same second.)
buildah run --isolation=chroot "$bb" -- /bin/sh -c 'rm -f /variant; echo moved > /variant' >/dev/null
buildah commit -q "$bb" localhost/yao-sandbox/busybox-registry:2 >/dev/null
buildah rm "$bb" >/dev/null
PRIV_IMAGE=$PRIVATE/team/tools
for t in none ok wrong; do
    check "the private image pushed to the private registry as :$RUN-$t" \
        registry_push localhost/yao-sandbox/busybox-registry:1 "$PRIV_IMAGE:$RUN-$t" private
done
on_exit "for t in none ok wrong; do ctr --address $YAO_PLANE_DIR/node/containerd/containerd.sock -n k8s.io images rm $PRIV_IMAGE:$RUN-\$t; done"
check "  which refuses anonymous pulls" eq "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$PKI/ca.crt" "https://$PRIVATE/v2/team/tools/manifests/$RUN-ok")" 401

# --- a private image: refused without a Secret, pulled with the class's imagePullSecrets ----------
kubectl -n $NS create secret docker-registry private-registry --docker-server="$PRIVATE" \
    --docker-username="$(cat "$PRIV_DIR/user")" --docker-password="$(cat "$PRIV_DIR/password")" >/dev/null
kubectl -n $NS create secret docker-registry private-registry-wrong --docker-server="$PRIVATE" \
    --docker-username="$(cat "$PRIV_DIR/user")" --docker-password=not-the-password >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-registry-plain}
spec:
  image: {allowedPrefixes: ["$PRIVATE/team/"]}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-registry-private}
spec:
  image: {allowedPrefixes: ["$PRIVATE/team/"], pullSecrets: [private-registry]}
---
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-registry-wrong}
spec:
  image: {allowedPrefixes: ["$PRIVATE/team/"], pullSecrets: [private-registry-wrong]}
YAML
on_exit "kubectl delete sandboxclass yao-it-registry-plain yao-it-registry-private yao-it-registry-wrong"
check "the SandboxClass CRD takes spec.image.pullSecrets" eq \
    "$(kubectl get sandboxclass yao-it-registry-private -o jsonpath='{.spec.image.pullSecrets}')" '["private-registry"]'
check "  and refuses a name that is no Secret name" contains \
    "$(kubectl apply -f - 2>&1 <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-registry-bad}
spec:
  image: {pullSecrets: [Not_A_Name]}
YAML
)" "spec.image.pullSecrets[0]"
sandbox private-none "className: yao-it-registry-plain" "image: \"$PRIV_IMAGE:$RUN-none\""
sandbox private-ok "className: yao-it-registry-private" "image: \"$PRIV_IMAGE:$RUN-ok\""
sandbox private-wrong "className: yao-it-registry-wrong" "image: \"$PRIV_IMAGE:$RUN-wrong\""
sandbox wrong-tag "image: \"$NODE_REGISTRY/yao-sandbox/sandbox:no-such-tag\""

check "the private image with the class's imagePullSecrets reaches Running" eventually 120 phase_is $NS private-ok Running
check "  its pod carries the class's Secret as imagePullSecrets" eq "$(pod_field private-ok '.spec.imagePullSecrets[*].name')" private-registry
check "  and runs the private image" eq "$(pod_field private-ok '.status.containerStatuses[0].image')" "$PRIV_IMAGE:$RUN-ok"

check "without a Secret: Ready reason ErrImagePull/ImagePullBackOff" eventually 90 pull_failed private-none
echo "    private-none: $(ready_reason private-none): $(ready_message private-none | cut -c1-300)"
check "  with the kubelet's message: the registry's 401" eventually 60 sh -c \
    "kubectl -n $NS get sandbox private-none -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].message}' | grep -qi '401 Unauthorized\|unauthorized'"
check "  naming the image" contains "$(ready_message private-none)" "$PRIV_IMAGE:$RUN-none"

check "wrong credentials: Ready reason ErrImagePull/ImagePullBackOff" eventually 90 pull_failed private-wrong
echo "    private-wrong: $(ready_reason private-wrong): $(ready_message private-wrong | cut -c1-300)"
check "  with the kubelet's message: the registry's 401" eventually 60 sh -c \
    "kubectl -n $NS get sandbox private-wrong -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].message}' | grep -qi '401 Unauthorized\|unauthorized'"
check "  its pod did carry the (wrong) Secret" eq "$(pod_field private-wrong '.spec.imagePullSecrets[*].name')" private-registry-wrong

check "a wrong tag: Ready reason ErrImagePull/ImagePullBackOff" eventually 90 pull_failed wrong-tag
echo "    wrong-tag: $(ready_reason wrong-tag): $(ready_message wrong-tag | cut -c1-300)"
check "  with the kubelet's message: the tag is not found" eventually 60 sh -c \
    "kubectl -n $NS get sandbox wrong-tag -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].message}' | grep -q 'no-such-tag.*not found'"
check "  and the phase is not Running" eq "$(sandbox_phase $NS wrong-tag | grep -c Running)" 0
kubectl -n $NS delete sandbox private-none private-wrong wrong-tag --wait=false >/dev/null

# --- the pull policy our pods get -----------------------------------------------------------------
check "a version tag (the default image) is pulled IfNotPresent" eq "$(pod_field plain '.spec.containers[0].imagePullPolicy')" IfNotPresent
MOVING=$NODE_REGISTRY/yao-it/moving:latest
check "an image pushed as :latest" registry_push localhost/yao-sandbox/busybox-registry:1 "$MOVING"
sandbox latest "image: \"$MOVING\""
check "a :latest Sandbox reaches Running" eventually 120 phase_is $NS latest Running
check "  its pod is pulled Always (the tag moves in the registry)" eq "$(pod_field latest '.spec.containers[0].imagePullPolicy')" Always
check "  and runs the first image" eq "$("$BUILD_DIR/bin/yao-sandbox" -n $NS exec latest -- cat /variant)" 1
first_id=$(pod_field latest '.status.containerStatuses[0].imageID')
check ":latest moved in the registry" registry_push localhost/yao-sandbox/busybox-registry:2 "$MOVING"
uid=$(pod_field latest .metadata.uid)
kubectl -n $NS delete pod "$(pod_of latest)" --wait=false >/dev/null
# The new pod itself ready (its container started), not the Sandbox's phase: that one may
# still say Running from the pod just deleted until the controller writes again.
new_pod() {
    local u; u=$(pod_field latest .metadata.uid) && [ -n "$u" ] && [ "$u" != "$uid" ] &&
        [ "$(pod_field latest '.status.conditions[?(@.type=="Ready")].status')" = True ] && phase_is $NS latest Running
}
check "the next pod of the Sandbox" eventually 120 new_pod
variant=$("$BUILD_DIR/bin/yao-sandbox" -n $NS exec latest -- cat /variant)
check "  runs the image :latest names now" eq "$variant" moved
[ "$variant" = moved ] || echo "    pod $(pod_field latest .metadata.uid) (the first: $uid), image $(pod_field latest '.status.containerStatuses[0].imageID'), started $(pod_field latest '.status.containerStatuses[0].state.running.startedAt'), restarts $(pod_field latest '.status.containerStatuses[0].restartCount')"
check "  (another digest than the first pod's)" eval '[ "$(pod_field latest .status.containerStatuses[0].imageID)" != "$first_id" ] && [ -n "$first_id" ]'
on_exit "ctr --address $YAO_PLANE_DIR/node/containerd/containerd.sock -n k8s.io images rm $MOVING"

if [ "$FAILED" != 0 ]; then
    for s in plain digest private-ok private-none private-wrong wrong-tag latest; do explain_sandbox $NS $s "$LOG"; done
fi
finish
