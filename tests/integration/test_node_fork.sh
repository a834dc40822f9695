#!/usr/bin/env bash
# spec.workspace.from with real containers on the real node: files written in sandbox A's
# /workspace (by the sandbox user, uid 1000) are there in a new sandbox B created with
# workspace.from: {sandbox: A} (its claim a clone of A's, copied by the test provisioner),
# owned by and writable for the sandbox user, modes kept; B's and A's workspaces are apart
# from then on (a write in either does not reach the other); on a WaitForFirstConsumer
# class as well. On local-path (which ignores a claim's dataSource: no cloning) a fork is
# filled by a copier pod instead: a 50 MB file, a symbolic link, a 0600 file and their
# times are in the fork, the source is unchanged, the copier is gone afterwards; a copy
# that cannot read the source is reported with cp's own message, no pod starts, and once
# the source is readable the retry fills the fork.
. "$(dirname "$0")/lib.sh"
use_real_node
export YAO_SANDBOX_STORAGE_CLASS=yao-test
NS=yao-node-fork
LOG=$BUILD_DIR/test-node-fork.log
: > "$LOG"
CLI=$BUILD_DIR/bin/yao-sandbox
check "CRD and manifests apply with kubectl" install_manifests
fresh_namespace $NS
start_controller "$LOG" --namespace $NS --max-running 0 --workers 4

sandbox() { # name workspace (flow YAML)
    printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec:\n  userID: fork-user\n  chatID: %s\n  lifecycle: persistent\n  workspace: %s\n' \
        "$1" "$1" "$2" | kubectl -n $NS apply -f - >/dev/null
}
sx() { "$CLI" -n $NS exec "$@"; }
field() { kubectl -n $NS get sandbox "$1" -o jsonpath="{$2}" 2>/dev/null; }

fork_pair() { # class-label source fork workspace-extra
    local what=$1 a=$2 b=$3 extra=$4
    sandbox "$a" "{size: 1Gi$extra}"
    check "$what: chat A runs on the real node" eventually 90 phase_is $NS "$a" Running
    check "  A writes its files as uid 1000" eq "$(sx "$a" -- sh -c 'mkdir -p /workspace/src && echo "print(1)" > /workspace/src/app.py &&
        printf "#!/bin/sh\necho run\n" > /workspace/run.sh && chmod 0750 /workspace/run.sh && echo notes > /workspace/notes.txt && id -u')" 1000
    sandbox "$b" "{size: 1Gi$extra, from: {sandbox: $a}}"
    check "  chat B, forked from A, runs on the real node" eventually 90 phase_is $NS "$b" Running
    check "  B's claim is a clone of A's" eq "$(kubectl -n $NS get pvc "$(field "$b" .status.workspaceClaim)" -o jsonpath='{.spec.dataSource.name}')" "$(field "$a" .status.workspaceClaim)"
    check "  B starts with A's files" eq "$(sx "$b" -- sh -c 'cat /workspace/src/app.py /workspace/notes.txt' | tr '\n' ' ')" "print(1) notes "
    check "  modes and owner kept (run.sh 750, uid 1000), and it runs" eq "$(sx "$b" -- sh -c 'stat -c "%a %u" /workspace/run.sh && /workspace/run.sh' | tr '\n' ' ')" "750 1000 run "
    check "  B can change the copied files" eq "$(sx "$b" -- sh -c 'echo b-edit >> /workspace/notes.txt && echo new > /workspace/b-only.txt && tail -n1 /workspace/notes.txt')" b-edit
    check "  B's writes do not appear in A" eq "$(sx "$a" -- sh -c 'cat /workspace/notes.txt; ls /workspace/b-only.txt 2>/dev/null || echo absent' | tr '\n' ' ')" "notes absent "
    sx "$a" -- sh -c 'echo a-later > /workspace/a-later.txt' >/dev/null
    check "  nor A's later writes in B" eq "$(sx "$b" -- sh -c 'ls /workspace/a-later.txt 2>/dev/null || echo absent')" absent
}

fork_pair "Immediate class" chat-a chat-b ""
fork_pair "WaitForFirstConsumer class" late-a late-b ", storageClassName: yao-test-wffc"

# --- local-path: no cloning, so a copy ---------------------------------------------------------
check "the plane has local-path (rancher.io/local-path, no cloning)" eq "$(kubectl get storageclass local-path -o jsonpath='{.provisioner}/{.metadata.annotations.sandbox\.yaoapps\.com/clones}')" "rancher.io/local-path/"
sandbox lp-a "{size: 1Gi, storageClassName: local-path}"
check "local-path: chat A runs" eventually 120 phase_is $NS lp-a Running
sx lp-a -- sh -c 'cd /workspace && dd if=/dev/urandom of=big.bin bs=1M count=50 2>/dev/null && mkdir -p d/e && echo deep > d/e/f.txt &&
    ln -s d/e/f.txt link && echo secret > private.txt && chmod 0600 private.txt && touch -d "2020-01-02 03:04:05" d/e/f.txt' >/dev/null
A_SUM=$(sx lp-a -- sh -c 'cd /workspace && md5sum big.bin | cut -d" " -f1')
A_MTIME=$(sx lp-a -- stat -c %Y /workspace/d/e/f.txt)
sandbox lp-b "{size: 1Gi, storageClassName: local-path, from: {sandbox: lp-a}}"
check "a fork of it reaches Running" eventually 180 phase_is $NS lp-b Running
B_CLAIM=$(field lp-b .status.workspaceClaim)
check "  its claim has no dataSource, is on local-path, and records the copy" eq \
    "$(kubectl -n $NS get pvc "$B_CLAIM" -o jsonpath='{.spec.dataSource.name}|{.spec.storageClassName}|{.metadata.annotations.sandbox\.yaoapps\.com/fork-from}')|$( [ -n "$(kubectl -n $NS get pvc "$B_CLAIM" -o jsonpath='{.metadata.annotations.sandbox\.yaoapps\.com/fork-copied}')" ] && echo copied)" \
    "|local-path|$(field lp-a .status.workspaceClaim)|copied"
check "  the 50 MB file is the same (md5)" eq "$(sx lp-b -- sh -c 'md5sum /workspace/big.bin | cut -d" " -f1')" "$A_SUM"
check "  the symbolic link is a link to the same path" eq "$(sx lp-b -- readlink /workspace/link)/$(sx lp-b -- cat /workspace/link)" "d/e/f.txt/deep"
check "  the 0600 file kept its mode and owner" eq "$(sx lp-b -- stat -c '%a %u' /workspace/private.txt)" "600 1000"
check "  times kept" eq "$(sx lp-b -- stat -c %Y /workspace/d/e/f.txt)" "$A_MTIME"
check "  the source is unchanged" eq "$(sx lp-a -- sh -c 'md5sum /workspace/big.bin | cut -d" " -f1; ls /workspace | wc -l' | tr '\n' ' ')" "$A_SUM 4 "
check "  an Event says the workspace was copied" eventually 20 sh -c "kubectl -n $NS get events --field-selector involvedObject.name=lp-b -o jsonpath='{.items[*].reason}' | grep -q WorkspaceCopied"
check "  and the copier pod is gone" eventually 90 eval "[ \"\$(kubectl -n $NS get pods -o name | grep -c yao-copy-)\" = 0 ]"
check "  the fork's writes stay in the fork" eq "$(sx lp-b -- sh -c 'echo b > /workspace/b.txt' >/dev/null; sx lp-a -- sh -c 'ls /workspace/b.txt 2>/dev/null || echo absent')" absent
# A copy that cannot read the source (a file its owner made unreadable): reported, no pod.
sx lp-a -- sh -c 'echo locked > /workspace/locked.txt && chmod 000 /workspace/locked.txt' >/dev/null
# (lp-c names no class: the controller's default here, yao-test — a copy may cross
# StorageClasses, which a clone cannot.)
sandbox lp-c "{size: 1Gi, from: {sandbox: lp-a}}"
check "a copy that fails: Pending/WorkspaceCopyFailed" eventually 120 eval "phase_is $NS lp-c Pending && reason_is $NS lp-c WorkspaceCopyFailed"
check "  with cp's own message" contains "$(field lp-c '.status.conditions[?(@.type=="Ready")].message')" "locked.txt"
check "  a Warning Event says so" eventually 20 sh -c "kubectl -n $NS get events --field-selector involvedObject.name=lp-c -o jsonpath='{range .items[*]}{.type}/{.reason} {end}' | grep -q Warning/WorkspaceCopyFailed"
check "  and no sandbox pod was made" eval "! kubectl -n $NS get pod yao-sb-fork-user-lp-c >/dev/null 2>&1"
sx lp-a -- chmod 0600 /workspace/locked.txt >/dev/null
check "  once the source is readable, the retry fills it and it runs" eventually 150 phase_is $NS lp-c Running
check "  with the file" eq "$(sx lp-c -- cat /workspace/locked.txt)" locked
check "  its claim is of the controller's default class (a copy across StorageClasses)" eq \
    "$(kubectl -n $NS get pvc "$(field lp-c .status.workspaceClaim)" -o jsonpath='{.spec.storageClassName}')" yao-test

kubectl -n $NS delete sandbox --all --wait=true --timeout=90s >/dev/null 2>&1
finish
