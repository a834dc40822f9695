/* tests/unit/test_workkey.c — the work queue's typed keys (sandbox/model/workkey.c): each kind
 * written and read back the same; a Sandbox's name is never taken for a namespace pass; what
 * is no key (no '/', empty or too long parts, an unknown '#' name) is refused; a key that
 * does not fit is refused whole. */
#include <string.h>

#include "check.h"
#include "sandbox/model/workkey.h"

TEST(each_kind_reads_back_as_written) {
    static const enum sbx_work_kind kinds[] = {SBX_WORK_SANDBOX, SBX_WORK_WARM_POOL, SBX_WORK_OWNERLESS};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        char text[SBX_WORK_KEY_MAX];
        struct sbx_work_key k;
        CHECK_INT(sbx_work_key_format(kinds[i], "team-a", "chat-1", text, sizeof text), 0);
        CHECK_INT(sbx_work_key_parse(text, &k), 0);
        CHECK_INT(k.kind, kinds[i]);
        CHECK_STR(k.ns, "team-a");
        CHECK_STR(k.name, kinds[i] == SBX_WORK_SANDBOX ? "chat-1" : "");
    }
}

TEST(the_text_forms_are_the_queues) {
    char text[SBX_WORK_KEY_MAX];
    CHECK_INT(sbx_work_key_format(SBX_WORK_SANDBOX, "ns", "sb", text, sizeof text), 0);
    CHECK_STR(text, "ns/sb");
    CHECK_INT(sbx_work_key_format(SBX_WORK_WARM_POOL, "ns", NULL, text, sizeof text), 0);
    CHECK_STR(text, "ns/#warm");
    CHECK_INT(sbx_work_key_format(SBX_WORK_OWNERLESS, "ns", "ignored", text, sizeof text), 0);
    CHECK_STR(text, "ns/#ownerless");
}

TEST(a_sandbox_name_is_never_a_namespace_pass) {
    struct sbx_work_key k;
    /* names a Sandbox may have that look like the passes' */
    CHECK_INT(sbx_work_key_parse("ns/warm", &k), 0);
    CHECK_INT(k.kind, SBX_WORK_SANDBOX);
    CHECK_INT(sbx_work_key_parse("ns/ownerless", &k), 0);
    CHECK_INT(k.kind, SBX_WORK_SANDBOX);
    CHECK_STR(k.name, "ownerless");
    /* an unknown '#' name is no key (no object can be named so) */
    CHECK_INT(sbx_work_key_parse("ns/#warmer", &k), -1);
    CHECK_INT(sbx_work_key_parse("ns/#", &k), -1);
}

TEST(what_is_no_key_is_refused) {
    struct sbx_work_key k;
    CHECK_INT(sbx_work_key_parse(NULL, &k), -1);
    CHECK_INT(sbx_work_key_parse("", &k), -1);
    CHECK_INT(sbx_work_key_parse("no-slash", &k), -1);
    CHECK_INT(sbx_work_key_parse("/name", &k), -1);
    CHECK_INT(sbx_work_key_parse("ns/", &k), -1);
    char long_key[SBX_WORK_KEY_MAX + 8];
    memset(long_key, 'a', SBX_WORK_PART_MAX);   /* a namespace one longer than kept */
    long_key[SBX_WORK_PART_MAX] = '/';
    strcpy(long_key + SBX_WORK_PART_MAX + 1, "sb");
    CHECK_INT(sbx_work_key_parse(long_key, &k), -1);
    memset(long_key, 'b', sizeof long_key);       /* a name one longer than kept */
    strcpy(long_key, "ns/");
    memset(long_key + 3, 'b', SBX_WORK_PART_MAX);
    long_key[3 + SBX_WORK_PART_MAX] = 0;
    CHECK_INT(sbx_work_key_parse(long_key, &k), -1);
    /* the longest parts kept */
    long_key[3 + SBX_WORK_PART_MAX - 1] = 0;
    CHECK_INT(sbx_work_key_parse(long_key, &k), 0);
    CHECK_INT((int)strlen(k.name), SBX_WORK_PART_MAX - 1);
}

TEST(a_key_that_does_not_fit_is_refused_whole) {
    char text[8];
    CHECK_INT(sbx_work_key_format(SBX_WORK_SANDBOX, "namespace", "sandbox", text, sizeof text), -1);
    CHECK_STR(text, "");
    CHECK_INT(sbx_work_key_format(SBX_WORK_SANDBOX, "ns", NULL, text, sizeof text), -1);
    CHECK_INT(sbx_work_key_format(SBX_WORK_WARM_POOL, "", NULL, text, sizeof text), -1);
}
