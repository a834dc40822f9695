#!/usr/bin/env bash
# spec.workspace.from on the plane (kwok nodes; the files are checked in the test
# provisioner's hostPath directories): a Sandbox whose source does not exist is
# Ready=False/WorkspaceSourceNotFound and gets no claim (one without its dataSource would
# start empty) until the source appears; the fork's claim then carries
# dataSource {kind: PersistentVolumeClaim, name: <the source's claim>}, the source's
# StorageClass and at least its size, and the provisioner filled its volume with a copy
# of the source's files (modes kept) before creating it; on a WaitForFirstConsumer class
# too; a clone claim made before its source is provisioned once the source is. Another
# StorageClass than the source's is WorkspaceSourceIncompatible; the field is immutable;
# a Sandbox cannot name itself.
. "$(dirname "$0")/lib.sh"
NS=yao-it-fork
LOG=$BUILD_DIR/test-fork.log
: > "$LOG"
check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4

sandbox() { # name chat workspace (flow YAML)
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec:\n  userID: fork-user\n  chatID: %s\n  lifecycle: persistent\n  workspace: %s\n' \
        "$1" "$2" "$3" | kubectl -n $NS apply -f - >/dev/null
}
field() { kubectl -n $NS get "$1" "$2" -o jsonpath="{$3}" 2>/dev/null; }
claim_of() { field sandbox "$1" .status.workspaceClaim; }
# hostdir CLAIM — the hostPath directory of the claim's volume, on this host
hostdir() { field pv "$(field pvc "$1" .spec.volumeName)" .spec.hostPath.path; }
# no_claim SANDBOX — its status names a claim, and there is none
no_claim() { local c; c=$(claim_of "$1") && [ -n "$c" ] && ! kubectl -n $NS get pvc "$c" >/dev/null 2>&1; }

# --- the source is not there: waiting, and no claim ---------------------------------------
sandbox fork-b chat-b '{size: 1Gi, from: {sandbox: src-a}}'
check "a fork of a missing Sandbox: Ready=False/WorkspaceSourceNotFound" eventually 20 reason_is $NS fork-b WorkspaceSourceNotFound
check "  phase Pending, the message names the source" contains "$(field sandbox fork-b '.status.phase}: {.status.conditions[?(@.type=="Ready")].message')" "Pending: spec.workspace.from: Sandbox src-a not found in namespace $NS"
sleep 2
check "  and no claim and no pod were created" eq "$(kubectl -n $NS get pvc,pod -o name | wc -l)" 0
check "  a Warning Event says so" eventually 20 sh -c "kubectl -n $NS get events --field-selector involvedObject.name=fork-b -o jsonpath='{range .items[*]}{.type}/{.reason} {end}' | grep -q Warning/WorkspaceSourceNotFound"

# --- the source appears; its files are cloned ---------------------------------------------
sandbox src-a chat-a '{size: 2Gi}'
check "the source Sandbox reaches Running" eventually 30 phase_is $NS src-a Running
A_CLAIM=$(claim_of src-a)
A_DIR=$(hostdir "$A_CLAIM")
check "  its volume is a directory of the provisioner" contains "$A_DIR" "$YAO_PLANE_DIR/pv/"
check "the fork reaches Running once its source is there" eventually 40 phase_is $NS fork-b Running
B_CLAIM=$(claim_of fork-b)
check "  its claim is a clone: dataSource PersistentVolumeClaim/<the source's claim>" eq "$(field pvc "$B_CLAIM" '.spec.dataSource.kind}/{.spec.dataSource.name')" "PersistentVolumeClaim/$A_CLAIM"
check "  in the source's StorageClass, at least the source's size (2Gi > 1Gi asked)" eq "$(field pvc "$B_CLAIM" '.spec.storageClassName} {.spec.resources.requests.storage')" "$(field pvc "$A_CLAIM" .spec.storageClassName) 2Gi"
# Files as a sandbox would leave them (kwok runs no containers): the provisioner copies
# whatever is in the volume. A second fork, made after they are written, gets them.
mkdir -p "$A_DIR/src/deep" && echo "from chat a" > "$A_DIR/notes.txt" && echo 'int main;' > "$A_DIR/src/deep/main.c" &&
    chmod 0640 "$A_DIR/notes.txt" && chown 1000:1000 "$A_DIR/notes.txt" && ln -s notes.txt "$A_DIR/link"
sandbox fork-c chat-c '{size: 3Gi, from: {sandbox: src-a}}'
check "a fork of a running source reaches Running" eventually 40 phase_is $NS fork-c Running
C_CLAIM=$(claim_of fork-c)
check "  its own size when larger than the source's" eq "$(field pvc "$C_CLAIM" '.spec.resources.requests.storage}/{.spec.dataSource.name')" "3Gi/$A_CLAIM"
C_DIR=$(hostdir "$C_CLAIM")
check "  its volume is its own directory" eval '[ -n "$C_DIR" ] && [ "$C_DIR" != "$A_DIR" ]'
check "  the provisioner copied the source's files" eq "$(cat "$C_DIR/notes.txt" 2>&1) $(cat "$C_DIR/src/deep/main.c" 2>&1)" "from chat a int main;"
check "  modes, ownership and symbolic links kept" eq "$(stat -c '%a %u:%g' "$C_DIR/notes.txt") $(readlink "$C_DIR/link")" "640 1000:1000 notes.txt"
echo "changed in c" > "$C_DIR/notes.txt"
check "  a copy, not a link: the source's file is unchanged" eq "$(cat "$A_DIR/notes.txt")" "from chat a"
check "  the source is Running still" eq "$(field sandbox src-a .status.phase)" Running

# --- WaitForFirstConsumer: copied when the scheduler has picked the node ------------------
sandbox wffc-a chat-wa '{storageClassName: yao-test-wffc}'
check "a source on a WaitForFirstConsumer class reaches Running" eventually 40 phase_is $NS wffc-a Running
WA_DIR=$(hostdir "$(claim_of wffc-a)")
echo "late binding" > "$WA_DIR/w.txt"
sandbox wffc-b chat-wb '{from: {sandbox: wffc-a}}'
check "  its fork reaches Running" eventually 40 phase_is $NS wffc-b Running
check "  in the same class, cloned from its claim" eq "$(field pvc "$(claim_of wffc-b)" '.spec.storageClassName} {.spec.dataSource.name')" "yao-test-wffc $(claim_of wffc-a)"
check "  with the source's files" eq "$(cat "$(hostdir "$(claim_of wffc-b)")/w.txt" 2>&1)" "late binding"

# --- the provisioner alone: a clone claim made before its source waits for it --------------
pvc() { # name [dataSource name]
    {
        printf 'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: %s}\nspec:\n' "$1"
        printf '  storageClassName: yao-test\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n'
        [ -z "${2:-}" ] || printf '  dataSource: {kind: PersistentVolumeClaim, name: %s}\n' "$2"
    } | kubectl -n $NS apply -f - >/dev/null
}
pvc raw-clone raw-src
sleep 4
check "a clone claim whose source does not exist stays Pending" eq "$(field pvc raw-clone '.status.phase} {.spec.dataSource.name')" "Pending raw-src"
pvc raw-src
bound() { [ "$(field pvc "$1" .status.phase)" = Bound ]; }
check "  its source is provisioned" eventually 20 bound raw-src
check "  and the clone is provisioned from it on a later try" eventually 30 bound raw-clone
check "  into a directory of its own" eval '[ -d "$(hostdir raw-clone)" ] && [ "$(hostdir raw-clone)" != "$(hostdir raw-src)" ]'
check "  the provisioner says it cloned it" eventually 5 grep -q "cloned $(hostdir raw-src) into $(hostdir raw-clone)" "$YAO_PLANE_DIR/logs/provisioner.log"

# --- refusals -------------------------------------------------------------------------------
sandbox other-class chat-oc '{storageClassName: yao-test-wffc, from: {sandbox: src-a}}'
check "another StorageClass than the source's: Ready=False/WorkspaceSourceIncompatible" eventually 20 reason_is $NS other-class WorkspaceSourceIncompatible
check "  the message says why" contains "$(field sandbox other-class '.status.conditions[?(@.type=="Ready")].message')" "a claim can be cloned only within its StorageClass"
check "  and it has no claim" no_claim other-class
out=$(kubectl -n $NS patch sandbox fork-b --type merge -p '{"spec":{"workspace":{"from":{"sandbox":"wffc-a"}}}}' 2>&1)
check "spec.workspace.from is immutable (the schema says so)" contains "$out" "workspace.from is immutable"
out=$(kubectl -n $NS patch sandbox src-a --type merge -p '{"spec":{"workspace":{"from":{"sandbox":"fork-b"}}}}' 2>&1)
check "  and cannot be added later" contains "$out" "workspace.from is immutable"
sandbox selfish chat-self '{from: {sandbox: selfish}}'
check "a Sandbox naming itself: Ready=False/InvalidSpec" eventually 20 reason_is $NS selfish InvalidSpec
check "  with a clear message" contains "$(field sandbox selfish '.status.conditions[?(@.type=="Ready")].message')" "cannot start from its own workspace"
out=$(kubectl -n $NS apply -f - 2>&1 <<'YAML'
apiVersion: sandbox.yaoapps.com/v1alpha1
kind: Sandbox
metadata: {name: bad-from}
spec: {userID: u, chatID: c, workspace: {from: {sandbox: Not_A_Name}}}
YAML
)
check "the schema refuses a source that is not a Sandbox name" contains "$out" "spec.workspace.from.sandbox"

kubectl -n $NS delete sandbox --all --wait=true --timeout=60s >/dev/null 2>&1
finish
