#!/usr/bin/env bash
# The NetworkPolicy of a Sandbox (a SandboxClass with spec.network.mode isolated) on the
# real plane (kwok nodes), as objects: what the API server stores, not whether a network
# plugin enforces it (none runs on this kernel, docs/security.md). The controller runs
# with its ServiceAccount's token. A class without spec.network makes no policy; an
# isolated class gives each sandbox an owned policy (named like the pod, selecting only
# its pod) that denies ingress but from the class's peers and allows egress to DNS and
# the class's CIDRs with the metadata address excepted; a Sandbox narrowing the CIDRs
# within the class gets them, one outside is InvalidSpec naming the CIDR and the class's
# list; a class change patches the policy; mode none deletes it; deleting the Sandbox
# deletes it; a controller whose RBAC lacks networkpolicies (an upgrade that kept the old
# roles) keeps serving and refuses isolated classes with InvalidSpec. Classes made here are
# named yao-it-np-* and removed at the end.
. "$(dirname "$0")/lib.sh"
NS=yao-it-netpol
LOG=$BUILD_DIR/test-netpol.log
: > "$LOG"
check "CRDs and manifests apply with kubectl" install_manifests
est() { kubectl wait --for=condition=Established crd/sandboxclasses.sandbox.yaoapps.com --timeout=30s >/dev/null; }
check "SandboxClass CRD is Established" est
cleanup_classes() { kubectl delete sandboxclass yao-it-np-open yao-it-np-iso yao-it-np-cut --ignore-not-found >/dev/null; }
cleanup_classes
on_exit cleanup_classes
fresh_namespace $NS

start_controller "$LOG" --namespace $NS --max-running 0 --workers 2

sandbox() {   # sandbox NAME SPEC-MEMBERS
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: nu, chatID: %s%s}\n' \
        "$1" "$1" "${2:+, $2}" | kubectl -n $NS apply -f - >/dev/null
}
npj() { kubectl -n $NS get networkpolicy "yao-sb-nu-$1" -o jsonpath="$2" 2>/dev/null; }
has_np() { kubectl -n $NS get networkpolicy "yao-sb-nu-$1" >/dev/null 2>&1; }
msg() { kubectl -n $NS get sandbox "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}'; }

iso_class() {   # iso_class EGRESS-CIDRS-JSON [MODE]
    kubectl apply -f - >/dev/null <<YAML
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-np-iso}
spec:
  network:
    mode: ${2:-isolated}
    ingressFrom:
      - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: yao}}
      - namespaceSelector: {}
        podSelector: {matchLabels: {app: yao-server}}
    egressCIDRs: $1
    egressExcept: []
YAML
}

# --- a class without spec.network: no policy --------------------------------------------
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-np-open}
spec: {}
YAML
check "a class without spec.network: none stored" \
    eq "$(kubectl get sandboxclass yao-it-np-open -o jsonpath='{.spec.network.mode}')" ""
sandbox open 'className: yao-it-np-open'
check "mode none: Running" eventually 20 phase_is $NS open Running
check "mode none: no NetworkPolicy" eval '! has_np open'

# --- isolated -----------------------------------------------------------------------------
iso_class '["0.0.0.0/0", "fd00::/8"]'
sandbox iso 'className: yao-it-np-iso'
check "isolated: Running" eventually 20 phase_is $NS iso Running
check "isolated: a NetworkPolicy named like the pod" eventually 10 has_np iso
check "  selects only its pod" eq "$(npj iso '{.spec.podSelector.matchLabels}')" '{"sandbox.yaoapps.com/pod":"yao-sb-nu-iso"}'
check "  the pod carries that label" \
    eq "$(kubectl -n $NS get pod yao-sb-nu-iso -o jsonpath='{.metadata.labels.sandbox\.yaoapps\.com/pod}')" yao-sb-nu-iso
check "  policyTypes Ingress and Egress" eq "$(npj iso '{.spec.policyTypes}')" '["Ingress","Egress"]'
check "  owned by the Sandbox (controller reference)" \
    eq "$(npj iso '{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].controller}')" "Sandbox/iso/true"
check "  ingress only from the class's peers" \
    eq "$(npj iso '{.spec.ingress[0].from}')" \
    '[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"yao"}}},{"namespaceSelector":{},"podSelector":{"matchLabels":{"app":"yao-server"}}}]'
check "  one ingress rule" eq "$(npj iso '{.spec.ingress[1]}')" ""
check "  egress: DNS to the kube-dns pods, UDP and TCP 53" \
    eq "$(npj iso '{.spec.egress[0].to[0].podSelector.matchLabels.k8s-app}/{.spec.egress[0].ports[*].protocol}/{.spec.egress[0].ports[*].port}')" \
    "kube-dns/UDP TCP/53 53"
check "  egress: the class's CIDRs, the metadata addresses excepted" \
    eq "$(npj iso '{.spec.egress[1].to}')" \
    '[{"ipBlock":{"cidr":"0.0.0.0/0","except":["169.254.169.254/32"]}},{"ipBlock":{"cidr":"fd00::/8","except":["fd00:ec2::254/128"]}}]'

# --- a class that cuts ranges out (egressExcept; absent: the cluster-internal ones), egressTo --
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-np-cut}
spec:
  network:
    mode: isolated
    egressTo:
      - namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [yao]}]}
    egressCIDRs: ["0.0.0.0/0", "::/0", "10.96.0.0/16"]
YAML
sandbox cut 'className: yao-it-np-cut'
check "no egressExcept: the cluster-internal and link-local ranges are cut out of 0.0.0.0/0 and ::/0" eventually 20 eval \
    '[ "$(npj cut "{.spec.egress[2].to}")" = '"'"'[{"ipBlock":{"cidr":"0.0.0.0/0","except":["10.0.0.0/8","172.16.0.0/12","192.168.0.0/16","100.64.0.0/10","169.254.0.0/16"]}},{"ipBlock":{"cidr":"::/0","except":["fc00::/7","fe80::/10"]}},{"ipBlock":{"cidr":"10.96.0.0/16"}}]'"'"' ]'
check "  (a CIDR the class names inside a cut range stays whole; the API server takes them as valid)" eventually 20 phase_is $NS cut Running
check "  egressTo: a rule to the class's peers" eq "$(npj cut '{.spec.egress[1].to[0].namespaceSelector.matchExpressions[0].values}')" '["yao"]'
sandbox cutnarrow 'className: yao-it-np-cut, network: {egressCIDRs: ["10.1.0.0/16"]}'
check "a Sandbox narrowing into a cut range: InvalidSpec naming the cut" eventually 20 eval \
    '[ "$(msg cutnarrow)" = '"'"'spec.network.egressCIDRs[0]: 10.1.0.0/16 is inside 10.0.0.0/8, which SandboxClass "yao-it-np-cut" excepts from its egress CIDRs (spec.network.egressExcept)'"'"' ]'
# The IPv4-mapped spellings of a cut range are that range (issue 34): refused the same way,
# and no policy or pod of them.
sandbox cutmapped 'className: yao-it-np-cut, network: {egressCIDRs: ["::ffff:10.0.0.0/104"]}'
check "a Sandbox naming ::ffff:10.0.0.0/104 (10.0.0.0/8 to Go's net.ParseCIDR): InvalidSpec naming the cut" eventually 20 eval \
    '[ "$(msg cutmapped)" = '"'"'spec.network.egressCIDRs[0]: 10.0.0.0/8 is inside 10.0.0.0/8, which SandboxClass "yao-it-np-cut" excepts from its egress CIDRs (spec.network.egressExcept)'"'"' ]'
sandbox cutmeta 'className: yao-it-np-cut, network: {egressCIDRs: ["::ffff:169.254.169.254/128"]}'
check "  ::ffff:169.254.169.254/128 too" eventually 20 eval \
    '[ "$(msg cutmeta)" = '"'"'spec.network.egressCIDRs[0]: 169.254.169.254/32 is inside 169.254.0.0/16, which SandboxClass "yao-it-np-cut" excepts from its egress CIDRs (spec.network.egressExcept)'"'"' ]'
sandbox cutcompat 'className: yao-it-np-cut, network: {egressCIDRs: ["::10.0.0.0/104"]}'
check "  the IPv4-compatible ::10.0.0.0/104 is refused, naming the IPv4 range" eventually 20 eval \
    'msg cutcompat | grep -q "IPv4-compatible IPv6 range.*write the IPv4 range 10.0.0.0/8"'
check "  none of them has a NetworkPolicy or a pod" eval \
    '! has_np cutmapped && ! has_np cutmeta && ! has_np cutcompat && ! kubectl -n $NS get pod yao-sb-nu-cutmapped yao-sb-nu-cutmeta yao-sb-nu-cutcompat -o name 2>/dev/null | grep -q .'
kubectl -n $NS delete sandbox cut cutnarrow cutmapped cutmeta cutcompat --wait=false >/dev/null
kubectl delete sandboxclass yao-it-np-cut --wait=false >/dev/null

# --- a Sandbox narrowing within the class, and one outside ----------------------------------
sandbox narrow 'className: yao-it-np-iso, network: {egressCIDRs: ["10.0.0.0/8", "169.254.0.0/16"]}'
check "narrowed: Running" eventually 20 phase_is $NS narrow Running
check "  its own CIDRs, the metadata address still excepted" eventually 10 eval \
    '[ "$(npj narrow "{.spec.egress[1].to}")" = '"'"'[{"ipBlock":{"cidr":"10.0.0.0/8"}},{"ipBlock":{"cidr":"169.254.0.0/16","except":["169.254.169.254/32"]}}]'"'"' ]'
iso_class '["10.0.0.0/8", "fd00::/8"]'
sandbox outside 'className: yao-it-np-iso, network: {egressCIDRs: ["8.8.8.0/24"]}'
check "a CIDR outside the class: InvalidSpec" eventually 20 reason_is $NS outside InvalidSpec
check "  naming the CIDR and the class's list" eq "$(msg outside)" \
    'spec.network.egressCIDRs[0]: 8.8.8.0/24 is not inside the egress CIDRs of SandboxClass "yao-it-np-iso" (spec.network.egressCIDRs: 10.0.0.0/8, fd00::/8)'
check "  and no pod, no policy" eq "$(kubectl -n $NS get pod,networkpolicy -o name | grep -c yao-sb-nu-outside)" 0
sandbox nocls 'network: {egressCIDRs: ["10.0.0.0/8"]}'
check "a Sandbox network without an isolated class: InvalidSpec" eventually 20 reason_is $NS nocls InvalidSpec
check "  message" eq "$(msg nocls)" \
    'spec.network.egressCIDRs: needs a SandboxClass with spec.network.mode isolated (this Sandbox has no class)'
out=$(printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: SandboxClass\nmetadata: {name: yao-it-np-bad}\nspec: {network: {mode: open}}\n' | kubectl apply -f - 2>&1)
check "schema: an unknown network mode is refused" contains "$out" "spec.network.mode"

# --- a class change reaches the policies ----------------------------------------------------
# (the class was narrowed to 10.0.0.0/8 above: 0.0.0.0/0 is gone from iso's policy, and
# narrow's 169.254.0.0/16 is now outside: its spec is invalid, and its running pod's policy
# narrows at once to what is still allowed, never wider than the Sandbox asked)
check "class change: the policy follows (patch)" eventually 20 eval \
    '[ "$(npj iso "{.spec.egress[1].to[*].ipBlock.cidr}")" = "10.0.0.0/8 fd00::/8" ]'
accepted_reason() { kubectl -n $NS get sandbox "$1" -o jsonpath='{.status.conditions[?(@.type=="Accepted")].reason}' 2>/dev/null; }
check "class change: a Sandbox CIDR now outside it: Accepted=False/InvalidSpec" eventually 20 eval '[ "$(accepted_reason narrow)" = InvalidSpec ]'
check "  its running pod runs on (phase Running)" phase_is $NS narrow Running
check "  and its policy narrows at once: the CIDR outside the class is gone, the one inside kept" eventually 20 eval \
    '[ "$(npj narrow "{.spec.egress[1].to[*].ipBlock.cidr}")" = "10.0.0.0/8" ]'
uid_before=$(npj iso '{.metadata.uid}')
kubectl -n $NS patch networkpolicy yao-sb-nu-iso --type merge -p '{"spec":{"ingress":[{}]}}' >/dev/null
check "a policy edited by hand is put back (same object)" eventually 20 eval \
    '[ "$(npj iso "{.spec.ingress[0].from[0].namespaceSelector.matchLabels}")" = '"'"'{"kubernetes.io/metadata.name":"yao"}'"'"' ] && [ "$(npj iso "{.metadata.uid}")" = "$uid_before" ]'
kubectl -n $NS delete networkpolicy yao-sb-nu-iso >/dev/null
check "a deleted policy is created again" eventually 20 eval '[ -n "$(npj iso "{.metadata.uid}")" ] && [ "$(npj iso "{.metadata.uid}")" != "$uid_before" ]'

# --- mode none deletes; deleting the Sandbox deletes --------------------------------------
iso_class '["10.0.0.0/8"]' none
check "mode none: the policy is deleted" eventually 20 eval '! has_np iso'
check "  the sandbox keeps running" phase_is $NS iso Running
iso_class '["10.0.0.0/8"]'
check "isolated again: the policy is back" eventually 20 has_np iso
kubectl -n $NS delete sandbox iso --wait=false >/dev/null
check "deleting the Sandbox deletes its policy" eventually 30 eval '! has_np iso'

# --- a stranger's policy of the name blocks the pod -------------------------------------------
kubectl -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: yao-sb-nu-clash}
spec: {podSelector: {}, policyTypes: [Ingress]}
YAML
sandbox clash 'className: yao-it-np-iso'
conflict_event() { kubectl -n $NS get events --field-selector involvedObject.name=clash,reason=NetworkPolicyNameConflict -o name | grep -q .; }
check "a stranger's policy of the name: Warning Event" eventually 20 conflict_event
check "  no pod without its policy" eq "$(kubectl -n $NS get pod yao-sb-nu-clash -o name 2>/dev/null)" ""
check "  the stranger's policy is left alone" \
    eq "$(kubectl -n $NS get networkpolicy yao-sb-nu-clash -o jsonpath='{.spec.policyTypes}')" '["Ingress"]'

check "no Forbidden in the controller log" eval "! grep -q 'status=403\|Forbidden' '$LOG'"

# --- an upgrade that kept the old RBAC (no networkpolicies): isolated classes refused ----
kill_controller TERM
kubectl get clusterrole yao-sandbox-controller -o json | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(json.dumps({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                  "metadata": {"name": "yao-it-np-oldrbac"},
                  "rules": [x for x in r["rules"] if "networkpolicies" not in x.get("resources", [])]}))' |
    kubectl apply -f - >/dev/null
on_exit "kubectl delete clusterrole yao-it-np-oldrbac --ignore-not-found; kubectl delete clusterrolebinding yao-it-np-oldrbac --ignore-not-found"
kubectl -n $NS create serviceaccount oldrbac >/dev/null
kubectl create clusterrolebinding yao-it-np-oldrbac --clusterrole=yao-it-np-oldrbac --serviceaccount=$NS:oldrbac >/dev/null
sa_kubeconfig "$BUILD_DIR/test-netpol-oldrbac.kubeconfig" oldrbac $NS
OLDLOG=$BUILD_DIR/test-netpol-oldrbac.log
: > "$OLDLOG"
CONTROLLER_KUBECONFIG=$BUILD_DIR/test-netpol-oldrbac.kubeconfig start_controller "$OLDLOG" --namespace $NS --max-running 0 --workers 2
sandbox late 'className: yao-it-np-iso'
sandbox lateopen 'className: yao-it-np-open'
check "without NetworkPolicy RBAC: the controller still serves (a class without network runs)" \
    eventually 20 phase_is $NS lateopen Running
check "  an isolated class's Sandbox is InvalidSpec" eventually 20 reason_is $NS late InvalidSpec
check "  message" eq "$(msg late)" \
    'spec.className: SandboxClass "yao-it-np-iso" has spec.network.mode isolated, but the controller cannot manage NetworkPolicies (no RBAC for networking.k8s.io networkpolicies)'
check "  and no pod" eq "$(kubectl -n $NS get pod yao-sb-nu-late -o name 2>/dev/null)" ""
check "  the log says why, once" eq "$(grep -c 'NetworkPolicies are not readable' "$OLDLOG")" 1
finish
