/* tests/unit/test_terminating.c — namespaces being deleted (sandbox/model/terminating.c): a
 * note (the refusal itself is a typed reason: test_rest_reason.c) holds the namespace's
 * passes for SBX_TERMINATING_HOLD_MS from the last refusal, an expired hold is forgotten,
 * other namespaces (and odd names) are not held. */
#include "check.h"

#include <string.h>

#include "sandbox/model/terminating.h"

#define NOW 5000000   /* monotonic ms */

TEST(a_note_holds_the_namespace_from_the_last_refusal) {
    struct sbx_terminating *t = sbx_terminating_new();
    CHECK(t != NULL);
    if (!t) return;
    CHECK_INT(sbx_terminating_left(t, "t", NOW), 0);
    sbx_terminating_note(t, "t", NOW);
    CHECK_INT(sbx_terminating_left(t, "t", NOW), SBX_TERMINATING_HOLD_MS);
    CHECK_INT(sbx_terminating_left(t, "t", NOW + 1000), SBX_TERMINATING_HOLD_MS - 1000);
    CHECK_INT(sbx_terminating_left(t, "other", NOW + 1000), 0);
    sbx_terminating_note(t, "t", NOW + 20000);   /* refused again: the hold starts again */
    CHECK_INT(sbx_terminating_left(t, "t", NOW + 40000), SBX_TERMINATING_HOLD_MS - 20000);
    sbx_terminating_free(t);
}

TEST(an_expired_hold_is_forgotten) {
    struct sbx_terminating *t = sbx_terminating_new();
    if (!t) { CHECK(!"made"); return; }
    sbx_terminating_note(t, "t", NOW);
    CHECK_INT(sbx_terminating_left(t, "t", NOW + SBX_TERMINATING_HOLD_MS), 0);
    /* gone, not merely past: a later time before the old deadline is not held either */
    CHECK_INT(sbx_terminating_left(t, "t", NOW + 1), 0);
    sbx_terminating_free(t);
}

TEST(odd_namespace_names_are_kept_apart) {
    struct sbx_terminating *t = sbx_terminating_new();
    char long_ns[501];
    if (!t) { CHECK(!"made"); return; }
    memset(long_ns, 'n', 500);
    long_ns[500] = '\0';
    sbx_terminating_note(t, long_ns, NOW);
    sbx_terminating_note(t, "名前空間", NOW);
    sbx_terminating_note(t, "../t", NOW);
    CHECK_INT(sbx_terminating_left(t, long_ns, NOW), SBX_TERMINATING_HOLD_MS);
    CHECK_INT(sbx_terminating_left(t, "名前空間", NOW), SBX_TERMINATING_HOLD_MS);
    CHECK_INT(sbx_terminating_left(t, "../t", NOW), SBX_TERMINATING_HOLD_MS);
    CHECK_INT(sbx_terminating_left(t, "t", NOW), 0);
    long_ns[499] = '\0';
    CHECK_INT(sbx_terminating_left(t, long_ns, NOW), 0);
    sbx_terminating_free(t);   /* frees the holds still there */
}
