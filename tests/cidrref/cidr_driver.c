/* tests/cidrref/cidr_driver.c — the C side of the CIDR reference comparison
 * (tests/cidrref/cidrref.go): for each input line "A<TAB>B" prints
 * "<A> <B> <contains>", where <A> is the canonical text sbx_cidr_parse and
 * sbx_cidr_format give A ("err" when refused), and <contains> is
 * sbx_cidr_contains(A, B) as 0 or 1 ("-" when either is refused). */
#include <stdio.h>
#include <string.h>

#include "sandbox/model/netpol.h"

int main(void) {
    char line[512];

    while (fgets(line, sizeof line, stdin)) {
        struct sbx_cidr c[2];
        char text[2][SBX_CIDR_TEXT_MAX];
        int ok[2];
        char *tab;

        line[strcspn(line, "\n")] = '\0';
        if (!(tab = strchr(line, '\t'))) {
            fprintf(stderr, "cidr_driver: a line needs a tab\n");
            return 2;
        }
        *tab = '\0';
        for (int i = 0; i < 2; i++) {
            ok[i] = sbx_cidr_parse(i ? tab + 1 : line, &c[i], NULL, 0) == 0;
            if (ok[i]) sbx_cidr_format(&c[i], text[i], sizeof text[i]);
            else snprintf(text[i], sizeof text[i], "err");
        }
        printf("%s %s %s\n", text[0], text[1], ok[0] && ok[1] ? (sbx_cidr_contains(&c[0], &c[1]) ? "1" : "0") : "-");
    }
    return ferror(stdin) ? 1 : 0;
}
