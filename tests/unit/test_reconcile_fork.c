/* tests/unit/test_reconcile_fork.c — a fork's workspace (spec.workspace.from; sandbox/io/fork.c)
 * in single passes on the fake API server (reconcile_env.h), the test playing the kubelet:
 * a fork of the user's own Sandbox gets a claim that names its source, a copier pod on the
 * source pod's node (the StorageClass does not clone) and no sandbox pod until the copier
 * succeeded; then the claim is marked filled, the copier goes and the sandbox pod comes.
 * Another user's Sandbox is no source: no claim, no copier, the reason says why. A failed
 * copy is reported with the copier's own message and only replaced after the retry time. */
#include <stdio.h>
#include <string.h>

#include "reconcile_env.h"
#include "sandbox/decide/reconcile_decide.h"
#include "sandbox/model/workspacecopy.h"

/* The uid of the stored Sandbox at path, into out ("" when none). */
static const char *uid_of(struct env *e, const char *path, char *out, size_t n) {
    return stored_str(e, path, "metadata.uid", out, n);
}

/* The path of the copier pod of the Sandbox at sb_path. */
static void copier_path(struct env *e, const char *sb_path, char *out, size_t n) {
    char uid[128], name[96];
    uid_of(e, sb_path, uid, sizeof uid);
    sbx_copier_name(uid, name, sizeof name);
    snprintf(out, n, POD_COLL "/%s", name);
}

/* The source: Sandbox src of user fu, its pod running on node-1, its claim bound. */
static int source_running(struct env *e, struct names *src) {
    names_of(src, "src", "fu", "a");
    if (stored_exists(e, src->sb)) return 0;
    if (seed_sandbox(e, "src", "fu", "a", ",\"lifecycle\":\"persistent\"", NULL) < 0 || pass(e, src, NULL) < 0 ||
        claim_bound(e, src->pvc) < 0 || fakeapi_patch(&e->fa, src->pod, "{\"spec\":{\"nodeName\":\"node-1\"}}") < 0 ||
        pod_running(e, src->pod, 0) < 0 || pass(e, src, NULL) < 0)
        return -1;
    char phase[32];
    return strcmp(stored_str(e, src->sb, "status.phase", phase, sizeof phase), "Running") ? -1 : 0;
}

#define FROM_SRC ",\"lifecycle\":\"persistent\",\"workspace\":{\"from\":{\"sandbox\":\"src\"}}"

/* A fork of src (Sandbox name of user fu, chat), passed until its copier exists; cp
 * receives the copier's path. */
static void fork_copying(struct env *e, struct names *fk, const char *name, const char *chat, char *cp, size_t n) {
    names_of(fk, name, "fu", chat);
    CHECK_INT(seed_sandbox(e, name, "fu", chat, FROM_SRC, NULL), 0);
    copier_path(e, fk->sb, cp, n);
    for (int i = 0; i < 3 && !stored_exists(e, cp); i++) CHECK_INT(pass(e, fk, NULL), 0);
    CHECK(stored_exists(e, cp));
}

/* Play the kubelet on the copier at path: ended with phase, the container's exit code and
 * message. */
static int copier_ended(struct env *e, const char *path, const char *phase, int code, const char *message) {
    char t[48], patch[1024];
    time_ago(0, t, sizeof t);
    snprintf(patch, sizeof patch,
             "{\"status\":{\"phase\":\"%s\",\"containerStatuses\":[{\"name\":\"%s\",\"ready\":false,\"restartCount\":0,"
             "\"state\":{\"terminated\":{\"exitCode\":%d,\"reason\":\"%s\",\"message\":\"%s\",\"finishedAt\":\"%s\"}}}]}}",
             phase, SBX_CONTAINER_NAME, code, code ? "Error" : "Completed", message, t);
    return fakeapi_patch(&e->fa, path, patch);
}

TEST(a_fork_of_the_users_own_sandbox_is_copied_before_it_runs) {
    struct env *e = env();
    struct names src, fk;
    CHECK(e != NULL);
    if (!e || source_running(e, &src) < 0) { CHECK(!"the source runs"); return; }
    char cp[512], buf[512];
    fork_copying(e, &fk, "fk", "b", cp, sizeof cp);
    /* its claim names the source's; a copier fills it, on the node the source's pod runs on */
    cJSON *claim = fakeapi_get(&e->fa, fk.pvc);
    CHECK(claim != NULL);
    CHECK_STR(kj_map_get(claim, "metadata.annotations", SBX_ANN_FORK_FROM), src.claim_name);
    CHECK(kj_map_get(claim, "metadata.annotations", SBX_ANN_FORK_COPIED) == NULL);
    cJSON_Delete(claim);
    cJSON *copier = fakeapi_get(&e->fa, cp);
    CHECK(copier != NULL);
    char *text = copier ? cJSON_PrintUnformatted(copier) : NULL;
    CHECK(text && strstr(text, "\"node-1\""));
    CHECK(text && strstr(text, src.claim_name) && strstr(text, fk.claim_name));
    CHECK_STR(kj_map_get(copier, "metadata.annotations", SBX_ANN_COPY_FOR), "fk");
    cJSON_free(text);
    cJSON_Delete(copier);
    CHECK(!stored_exists(e, fk.pod));
    CHECK_STR(ready_reason(e, fk.sb, buf, sizeof buf), SBX_REASON_WS_COPYING);
    /* another pass while it copies: nothing new */
    size_t mark = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &fk, NULL), 0);
    CHECK_INT(fakeapi_count(&e->fa, mark, "POST", POD_COLL), 0);
    /* the copier succeeds: the claim is marked filled, the copier goes, the pod comes */
    CHECK_INT(copier_ended(e, cp, "Succeeded", 0, "copied"), 0);
    CHECK(pod_cached(e, cp));
    CHECK_INT(pass(e, &fk, NULL), 0);
    claim = fakeapi_get(&e->fa, fk.pvc);
    CHECK(kj_map_get(claim, "metadata.annotations", SBX_ANN_FORK_COPIED) != NULL);
    cJSON_Delete(claim);
    cJSON *gone = fakeapi_get(&e->fa, cp);
    CHECK(gone == NULL || kj_path(gone, "metadata.deletionTimestamp") != NULL);
    cJSON_Delete(gone);
    for (int i = 0; i < 3 && !stored_exists(e, fk.pod); i++) CHECK_INT(pass(e, &fk, NULL), 0);
    CHECK(stored_exists(e, fk.pod));
    /* the pod mounts the fork's claim, not the source's */
    cJSON *pod = fakeapi_get(&e->fa, fk.pod);
    text = pod ? cJSON_PrintUnformatted(pod) : NULL;
    CHECK(text && strstr(text, fk.claim_name) && !strstr(text, src.claim_name));
    cJSON_free(text);
    cJSON_Delete(pod);
}

TEST(another_users_sandbox_is_no_source) {
    struct env *e = env();
    struct names src, th;
    CHECK(e != NULL);
    if (!e || source_running(e, &src) < 0) { CHECK(!"the source runs"); return; }
    names_of(&th, "thief", "other", "x");
    CHECK_INT(seed_sandbox(e, "thief", "other", "x", FROM_SRC, NULL), 0);
    char cp[512], buf[512];
    copier_path(e, th.sb, cp, sizeof cp);
    size_t mark = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &th, NULL), 0);
    CHECK_INT(pass(e, &th, NULL), 0);
    /* a spec that cannot be applied: Ready InvalidSpec, Accepted=False saying why */
    CHECK_STR(ready_reason(e, th.sb, buf, sizeof buf), SBX_REASON_INVALID);
    cJSON *sb = fakeapi_get(&e->fa, th.sb);
    const cJSON *acc = kj_condition(sb, "Accepted");
    CHECK_STR(kj_str(acc, "status"), "False");
    CHECK_STR(kj_str(acc, "reason"), SBX_REASON_WS_SOURCE_FORBIDDEN);
    const char *msg = kj_str(kj_condition(sb, "Ready"), "message");
    CHECK(msg && strstr(msg, "belongs to another user"));
    cJSON_Delete(sb);
    CHECK(!stored_exists(e, th.pvc));
    CHECK(!stored_exists(e, th.pod));
    CHECK(!stored_exists(e, cp));
    CHECK_INT(fakeapi_count(&e->fa, mark, "POST", POD_COLL), 0);
    CHECK_INT(fakeapi_count(&e->fa, mark, "POST", PVC_COLL), 0);
}

TEST(a_failed_copy_is_reported_and_replaced_only_after_the_retry_time) {
    struct env *e = env();
    struct names src, fk;
    CHECK(e != NULL);
    if (!e || source_running(e, &src) < 0) { CHECK(!"the source runs"); return; }
    char cp[512], buf[512];
    fork_copying(e, &fk, "fk2", "c", cp, sizeof cp);
    CHECK_INT(copier_ended(e, cp, "Failed", 1, "cp: no space left on device"), 0);
    CHECK(pod_cached(e, cp));
    size_t mark = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &fk, NULL), 0);
    CHECK_STR(ready_reason(e, fk.sb, buf, sizeof buf), SBX_REASON_WS_COPY_FAILED);
    cJSON *sb = fakeapi_get(&e->fa, fk.sb);
    const char *msg = kj_str(kj_condition(sb, "Ready"), "message");
    CHECK(msg && strstr(msg, "no space left on device") && strstr(msg, "exit code 1"));
    cJSON_Delete(sb);
    CHECK_INT(fakeapi_count(&e->fa, mark, "DELETE", cp), 0);   /* shown, not yet replaced */
    CHECK(!stored_exists(e, fk.pod));
    /* the retry time later: the failed copier goes (uid precondition), for a new one */
    kj_now_offset_set(SBX_COPY_RETRY_MS + 1000);
    mark = fakeapi_mark(&e->fa);
    CHECK_INT(pass(e, &fk, NULL), 0);
    CHECK_INT(fakeapi_count(&e->fa, mark, "DELETE", cp), 1);
    cJSON *del = fakeapi_last_body(&e->fa, mark, "DELETE", cp);
    CHECK(precondition(del, "uid") != NULL);
    cJSON_Delete(del);
    CHECK(!stored_exists(e, fk.pod));
    kj_now_offset_set(0);
}

/* The claim cache behind the pass that marked the claim filled and deleted the copier (seen
 * under load: a second copier 14 ms after the first finished, copying the source again over
 * the fork's workspace while its pod started): the next pass reads the claim fresh before it
 * makes a copier, and makes none. */
TEST(a_claim_cache_behind_a_finished_copy_makes_no_second_copier) {
    struct env *e = env();
    struct names src, fk;
    CHECK(e != NULL);
    if (!e || source_running(e, &src) < 0) { CHECK(!"the source runs"); return; }
    char cp[512];
    fork_copying(e, &fk, "fk3", "d", cp, sizeof cp);
    CHECK_INT(copier_ended(e, cp, "Succeeded", 0, "copied"), 0);
    CHECK(pod_cached(e, cp));
    CHECK_INT(fakeapi_hold(&e->fa, PVC_COLL, 1), 0);
    CHECK_INT(pass(e, &fk, NULL), 0);   /* settles (claim still unmarked), marks it, deletes the copier */
    cJSON *claim = fakeapi_get(&e->fa, fk.pvc);
    CHECK(kj_map_get(claim, "metadata.annotations", SBX_ANN_FORK_COPIED) != NULL);
    cJSON_Delete(claim);
    CHECK(!stored_exists(e, cp));
    CHECK(pod_cached(e, cp));           /* the copier's deletion is seen; the claim's mark is not */
    size_t mark = fakeapi_mark(&e->fa);
    CHECK_INT(pass_now(e, &fk, NULL), 0);
    CHECK_INT(pass_now(e, &fk, NULL), 0);
    CHECK_INT(fakeapi_count(&e->fa, mark, "POST", POD_COLL), 0);
    CHECK(!stored_exists(e, cp));
    /* the mark arrives: the sandbox pod comes, still no copier */
    CHECK_INT(fakeapi_hold(&e->fa, PVC_COLL, 0), 0);
    for (int i = 0; i < 3 && !stored_exists(e, fk.pod); i++) CHECK_INT(pass(e, &fk, NULL), 0);
    CHECK(stored_exists(e, fk.pod));
    CHECK(!stored_exists(e, cp));
}
