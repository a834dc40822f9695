#!/usr/bin/env bash
# Tenancy of the running caps on the plane (kwok nodes; issue 34). The namespace is the
# tenant boundary:
# - a class with maxRunningPerUser: 1 — tenant C's Sandbox naming userID bob does not make
#   tenant B's bob wait: each namespace's bob has his own slot; the waiting one's message
#   names the namespace it is counted in; a freed slot goes to the same tenant's bob;
# - forks: four forks of a paused Sandbox by a user capped at 1, filled by a copy (a
#   StorageClass not marked as cloning): a copier pod holds the user's slot, so at most one
#   copier (or sandbox pod) of the user exists at any moment and at most one new claim is
#   made; the others wait (UserCapacityExceeded); deleting the one that holds the slot lets
#   the next fork's copy start;
# - a class the operator widens (maxRunningPerUserScope: Cluster): there bob's Sandbox of
#   the class in C holds the slot bob's in B waits for, with a message saying so; a scope
#   the CRD does not know is refused by the API server;
# - a stopped controller (SIGSTOP, its watches silent) while a waiting Sandbox is deleted
#   and made again under the same name, and the running one it waited for is deleted:
#   once it runs again, the new one is admitted (no ghost of the old uid holds the line).
#   (The relist path proper — a 410 after the gap — is driven deterministically by
#   tests/unit/test_informer_faults.c relist_tells_a_replaced_object_as_delete_then_add.)
# - big objects: one tenant's 24 Sandboxes of ~200 KB and a controller restarted with a
#   1 MiB response limit (--max-response-size): its lists page under the limit and another
#   tenant's new Sandbox runs.
# The classes are yao-it-ten-capped and yao-it-ten-shared, the StorageClass yao-it-ten-copy;
# removed at the end.
# The controller watches every namespace, but serves one shard of 1024 (--shards): the
# three tenants' namespaces are named so that their users fall in that shard, and other
# suites' Sandboxes on the shared plane almost surely do not (it never touches them).
. "$(dirname "$0")/lib.sh"
SHARDS=1024
# pick_ns PREFIX USER SHARD — the first PREFIX-N whose USER falls in SHARD
pick_ns() {
    python3 -c 'import sys
def h(s):
    x = 0xcbf29ce484222325
    for b in s.encode():
        x = ((x ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return x % int(sys.argv[3])
n = 0
while h("%s-%d/%s" % (sys.argv[1], n, sys.argv[2])) != int(sys.argv[4]):
    n += 1
print("%s-%d" % (sys.argv[1], n))' "$1" "$2" "$SHARDS" "$3"
}
NB=yao-it-ten-b
SHARD=$(shard_hash $NB bob $SHARDS)
NC=$(pick_ns yao-it-ten-c bob "$SHARD")
NF=$(pick_ns yao-it-ten-f alice "$SHARD")
check "the tenants' users fall in one shard ($SHARD of $SHARDS)" eq "$(shard_hash "$NC" bob $SHARDS) $(shard_hash "$NF" alice $SHARDS)" "$SHARD $SHARD"
LOG=$BUILD_DIR/test-tenancy.log
: > "$LOG"
check "CRDs and manifests apply with kubectl" install_manifests
kubectl wait --for=condition=Established crd/sandboxclasses.sandbox.yaoapps.com --timeout=30s >/dev/null
cleanup() {
    kubectl delete sandboxclass yao-it-ten-capped yao-it-ten-shared --ignore-not-found >/dev/null
    kubectl delete storageclass yao-it-ten-copy --ignore-not-found >/dev/null
}
cleanup
on_exit cleanup
fresh_namespace $NB
fresh_namespace $NC
fresh_namespace $NF
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: SandboxClass
metadata: {name: yao-it-ten-capped}
spec: {maxRunningPerUser: 1}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: yao-it-ten-copy}
provisioner: yao-sandbox.test/hostpath
reclaimPolicy: Delete
volumeBindingMode: Immediate
YAML
# Every namespace: the tenants are three namespaces of one controller.
start_controller "$LOG" --max-running 0 --workers 4 --shards $SHARDS --shard "$SHARD"

sandbox() {   # sandbox NS NAME USER [SPEC-MEMBERS]  (of class $CLASS)
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: %s, chatID: %s, lifecycle: persistent, className: %s%s}\n' \
        "$2" "$3" "$2" "${CLASS:-yao-it-ten-capped}" "${4:+, $4}" | kubectl -n "$1" apply -f - >/dev/null
}
msg() { kubectl -n "$1" get sandbox "$2" -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}' 2>/dev/null; }
# live_pods NS — pods of the namespace not being deleted
live_pods() {
    kubectl -n "$1" get pods -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' 2>/dev/null |
        awk 'NF == 1' | grep -c . || true
}

# --- a user is counted within the namespace ---------------------------------------------------------
sandbox $NC c-bob bob
check "tenant C's editor names userID bob: that Sandbox runs" eventually 30 phase_is $NC c-bob Running
sandbox $NC c-bob2 bob
check "  C's second bob Sandbox waits for C's bob: UserCapacityExceeded" eventually 20 reason_is $NC c-bob2 UserCapacityExceeded
check "  its message names the namespace it is counted in" contains "$(msg $NC c-bob2)" "(counted in namespace \"$NC\")"
sandbox $NB b-bob bob
check "tenant B's bob, who runs nothing in B, is not held by C's: Running" eventually 30 phase_is $NB b-bob Running
sandbox $NB b-bob2 bob
check "  B's bob at his own cap: his second waits" eventually 20 reason_is $NB b-bob2 UserCapacityExceeded
check "  its message names B" contains "$(msg $NB b-bob2)" "(counted in namespace \"$NB\")"
kubectl -n $NC delete sandbox c-bob --wait=false >/dev/null
check "C's bob's slot freed: C's second runs" eventually 30 phase_is $NC c-bob2 Running
check "  and B's second still waits (the slot was not B's)" reason_is $NB b-bob2 UserCapacityExceeded

# --- a stopped controller while a waiter is replaced under its name ---------------------------------
CPID=${CONTROLLER_PIDS[-1]}
old_uid=$(kubectl -n $NB get sandbox b-bob2 -o jsonpath='{.metadata.uid}')
kill -STOP "$CPID"
on_exit "kill -CONT $CPID"
kubectl -n $NB delete sandbox b-bob2 --wait=true --timeout=30s >/dev/null
sandbox $NB b-bob2 bob
kubectl -n $NB delete sandbox b-bob --wait=false >/dev/null
new_uid=$(kubectl -n $NB get sandbox b-bob2 -o jsonpath='{.metadata.uid}')
sleep 2
kill -CONT "$CPID"
check "while the controller was stopped, b-bob2 was made again (a new uid)" eval '[ -n "$new_uid" ] && [ "$new_uid" != "$old_uid" ]'
check "  after it resumes, the new b-bob2 runs in the slot b-bob left" eventually 40 phase_is $NB b-bob2 Running

# --- forks: the copier holds the user's slot ---------------------------------------------------------
sandbox $NF src alice 'workspace: {storageClassName: yao-it-ten-copy, size: 1Gi}'
check "the source runs" eventually 30 phase_is $NF src Running
kubectl -n $NF patch sandbox src --type=merge -p '{"spec":{"paused":true}}' >/dev/null
check "  and is paused: Stopped, its claim kept" eventually 30 phase_is $NF src Stopped
check "  (no pod of the user left)" eventually 30 eq "$(live_pods $NF)" 0
for i in 1 2 3 4; do
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: f%s}\nspec: {userID: alice, chatID: f%s, lifecycle: persistent, className: yao-it-ten-capped, workspace: {from: {sandbox: src}}}\n' \
        $i $i | kubectl -n $NF apply -f - >/dev/null
done
check "four forks by a user capped at 1: a copier or a sandbox pod of hers appears" eventually 30 eval '[ "$(live_pods '$NF')" -ge 1 ]'
maxp=0; maxc=0
for _ in $(seq 1 40); do
    p=$(live_pods $NF)
    c=$(kubectl -n $NF get pvc -o name 2>/dev/null | grep -c . || true)
    [ "$p" -gt "$maxp" ] && maxp=$p
    [ "$c" -gt "$maxc" ] && maxc=$c
    sleep 0.25
done
check "  sampled 10 s: never more than one pod (copier or sandbox) of hers at once" eq "$maxp" 1
check "  and never more than one new claim beside the source's" eval '[ "$maxc" -le 2 ]'
waiting=$(for i in 1 2 3 4; do sandbox_reason $NF f$i; echo; done | grep -c '^UserCapacityExceeded$' || true)
check "  three forks wait: UserCapacityExceeded" eq "$waiting" 3
# the fork that holds the slot: the one not waiting
holder=$(for i in 1 2 3 4; do [ "$(sandbox_reason $NF f$i)" = UserCapacityExceeded ] || echo f$i; done | head -1)
check "  one fork holds the slot" eval '[ -n "$holder" ]'
kubectl -n $NF delete sandbox "$holder" --wait=false >/dev/null
next_started() {
    local n=0 i
    for i in 1 2 3 4; do
        [ "f$i" = "$holder" ] && continue
        [ "$(sandbox_reason $NF f$i)" = UserCapacityExceeded ] || n=$((n + 1))
    done
    [ "$n" = 1 ]
}
check "  the holder deleted: exactly one more fork gets the slot" eventually 60 next_started
maxp=0
for _ in $(seq 1 20); do
    p=$(live_pods $NF)
    [ "$p" -gt "$maxp" ] && maxp=$p
    sleep 0.25
done
check "  still at most one pod of hers at once (the deleted holder's going away aside)" eval '[ "$maxp" -le 2 ]'

# --- a class that counts a userID in every namespace -----------------------------------------------
shared_class() {   # shared_class SCOPE
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: SandboxClass\nmetadata: {name: yao-it-ten-shared}\nspec: {maxRunningPerUser: 1, maxRunningPerUserScope: %s}\n' \
        "$1" | kubectl apply -f - 2>&1 >/dev/null
}
out=$(shared_class cluster || true)
check "a scope the CRD does not know is refused by the API server" contains "$out" 'Unsupported value: "cluster"'
check "the operator's class counts bob in every namespace (maxRunningPerUserScope: Cluster)" eval 'shared_class Cluster'
CLASS=yao-it-ten-shared sandbox $NC c-sh bob
check "  C's bob Sandbox of that class runs" eventually 30 phase_is $NC c-sh Running
CLASS=yao-it-ten-shared sandbox $NB b-sh bob
check "  B's bob Sandbox of that class waits for C's: UserCapacityExceeded" eventually 20 reason_is $NB b-sh UserCapacityExceeded
check "  its message says the class counts across namespaces" contains "$(msg $NB b-sh)" "(counted across namespaces"
kubectl -n $NC delete sandbox c-sh --wait=false >/dev/null
check "  C's bob Sandbox of the class deleted: B's runs" eventually 30 phase_is $NB b-sh Running
kubectl -n $NB delete sandbox b-sh --wait=false >/dev/null

# --- big objects in one tenant do not stop the controller for the others -------------------------
# 24 paused Sandboxes of ~200 KB each (an annotation: metadata allows 256 KiB) in one
# namespace, about 4.8 MB, and a controller restarted with --max-response-size 1Mi: the
# initial list from the watch cache is one page over the limit; the controller pages from
# etcd instead, and another tenant's new Sandbox gets its pod. (At the default 64 MiB the
# same happens with fifty 1.4 MB objects; the plane's objects here are smaller.)
NBIG=$(pick_ns yao-it-ten-big bulk "$SHARD")
fresh_namespace $NBIG
kubectl -n $NB delete sandbox b-bob2 --wait=true --timeout=60s >/dev/null
kill_controller TERM
python3 - "$NBIG" > "$BUILD_DIR/test-tenancy-big.yaml" <<'PY'
import json, sys
ns = sys.argv[1]
items = [{"apiVersion": "sandbox.yaoapps.com/v1alpha1", "kind": "Sandbox",
          "metadata": {"name": "big-%02d" % i, "namespace": ns,
                       "annotations": {"example.com/blob": ("%02d" % i) * 100000}},
          "spec": {"userID": "bulk", "chatID": "big-%02d" % i, "lifecycle": "persistent", "paused": True}}
         for i in range(24)]
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
check "24 Sandboxes of ~200 KB each are created in one namespace" eval \
    'kubectl create -f "$BUILD_DIR/test-tenancy-big.yaml" >/dev/null && [ "$(kubectl -n '$NBIG' get sandbox -o name | grep -c .)" = 24 ]'
LOG2=$BUILD_DIR/test-tenancy-2.log
: > "$LOG2"
start_controller "$LOG2" --max-running 0 --workers 4 --shards $SHARDS --shard "$SHARD" --max-response-size 1Mi
sandbox $NB b-late bob
check "a controller restarted with a 1 MiB response limit: another tenant's new Sandbox runs" eventually 60 phase_is $NB b-late Running
check "  its list was paged under the limit (the watch cache's one page was too large)" \
    grep -q 'list page too large; asking for smaller pages' "$LOG2"
all_have_status() { [ "$(kubectl -n $NBIG get sandbox -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c .)" = 24 ]; }
check "  and the big tenant's Sandboxes all have a status" eventually 60 all_have_status
kubectl -n $NBIG delete sandbox --all --wait=false >/dev/null

finish
