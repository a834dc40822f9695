/* naming_driver.c — runs the controller's naming rules (controller/sandbox/model/naming.c) for
 * the Go client's cross-check test (naming_test.go). Each input line is
 * "HEX(user),HEX(chat)"; each output line is "POD-NAME LABEL(user) LABEL(chat)", or
 * "ERROR" when sbx_name_pod refuses the pair. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/model/naming.h"

/* Decode hex in place; returns 0, or -1 on a bad digit. */
static int unhex(char *s) {
    size_t n = strlen(s), i;
    if (n % 2) return -1;
    for (i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) return -1;
        s[i] = (char)v;
    }
    s[n / 2] = '\0';
    return 0;
}

int main(void) {
    static char line[4096];
    while (fgets(line, sizeof(line), stdin)) {
        char *user = line, *chat = strchr(line, ','), *nl;
        char name[SBX_NAME_MAX + 1], lu[SBX_LABEL_VALUE_MAX + 1], lc[SBX_LABEL_VALUE_MAX + 1];
        if (!chat) return 2;
        *chat++ = '\0';
        if ((nl = strchr(chat, '\n'))) *nl = '\0';
        if (unhex(user) || unhex(chat)) return 2;
        sbx_label_value(user, lu, sizeof(lu));
        sbx_label_value(chat, lc, sizeof(lc));
        if (sbx_name_pod(user, chat, name, sizeof(name)) != 0) printf("ERROR %s %s\n", lu[0] ? lu : "-", lc[0] ? lc : "-");
        else printf("%s %s %s\n", name, lu[0] ? lu : "-", lc[0] ? lc : "-");
    }
    return 0;
}
