/* tests/unit/test_cli_listing.c — ls and stat without a cluster (cli/listing.c): the parser
 * of the listing script's output (groups of names with link targets, then stat lines; a
 * vanished entry left out; malformed text refused) and the mode string. (The script itself
 * runs in test_cli_remote.c.) */
#include <stdlib.h>

#include "check.h"
#include "cli/listing.h"

#define UNICODE_NAME "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93.txt"   /* "héllo wörld ✓.txt" */

TEST(listing_parse_reads_groups_of_names_and_stat_lines) {
    static const char listing[] =
        "1\n/w/dir/\0\0" "41ed 4096 1732873000\n"
        "4\nbig file.bin\0\0link\0target\n\0" UNICODE_NAME "\0\0gone\0\0"
        "81a4 5242880 1732873001\n" "a1ff 7 1732873002\n" "8180 0 -5\n" "-\n"
        "1\n.hidden\0\0" "11b6 0 0\n";
    struct cli_file_info *v;
    size_t n;
    CHECK_INT(cli_listing_parse(listing, sizeof(listing) - 1, &v, &n), 0);
    CHECK_INT(n, 5);                                   /* "gone" vanished: left out */
    if (n == 5) {
        CHECK_INT(v[0].type, 'd');
        CHECK_STR(v[0].name, "dir");                   /* the path, by its base name */
        CHECK_INT(v[0].mode, 0755);
        CHECK_INT(v[0].mtime_ms, 1732873000000LL);
        CHECK_STR(v[1].name, "big file.bin");
        CHECK_INT(v[1].type, 'f');
        CHECK_INT(v[1].size, 5242880);
        CHECK_INT(v[1].mode, 0644);
        CHECK_STR(v[1].link, "");
        CHECK_INT(v[2].type, 'l');
        CHECK_STR(v[2].link, "target\n");              /* a newline in a target survives */
        CHECK_STR(v[3].name, UNICODE_NAME);
        CHECK_INT(v[3].mode, 0600);
        CHECK_INT(v[3].mtime_ms, -5000);
        CHECK_STR(v[4].name, ".hidden");
        CHECK_INT(v[4].type, 'p');
    }
    cli_file_infos_free(v, n);
    CHECK_INT(cli_listing_parse("", 0, &v, &n), 0);
    CHECK_INT(n, 0);
    CHECK(v == NULL);
    static const struct { const char *text; size_t len; } bad[] = {
        {"1\nx\0\0", 5},                                 /* no stat line */
        {"1\nx\0", 4},                                   /* no link field */
        {"2\nx\0\0" "81a4 0 0\n", 14},                   /* first group is not one entry */
        {"1\nx\0\0" "81a4 0 0\n" "1\n\0\0" "81a4 0 0\n", 25},   /* an empty name */
        {"1\nx\0\0" "zz 0 0\n", 12},                     /* mode not hex */
        {"1\nx\0\0" "81a4 x 0\n", 14},
        {"1\nx\0\0" "81a4 0 0 9\n", 16},
        {"1\nx\0\0" "-\n", 8},                           /* the path itself vanished */
        {"x\n", 2},
        {"99999999999999999999\n", 21},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_INT(cli_listing_parse(bad[i].text, bad[i].len, &v, &n), -1);
    }
}

TEST(mode_string_like_ls) {
    char m[11];
    cli_mode_string('d', 0755, m); CHECK_STR(m, "drwxr-xr-x");
    cli_mode_string('f', 0640, m); CHECK_STR(m, "-rw-r-----");
    cli_mode_string('l', 0777, m); CHECK_STR(m, "lrwxrwxrwx");
    cli_mode_string('d', 01777, m); CHECK_STR(m, "drwxrwxrwt");
    cli_mode_string('f', 04644, m); CHECK_STR(m, "-rwSr--r--");
}
