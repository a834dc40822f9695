/* tests/unit/test_cli_paths.c — the CLI's sandbox and archive paths (cli/paths.c): joining
 * to the working directory, the `tar -C DIR NAME` split, canonical member names, symlink
 * targets that must stay inside, and the base name ls shows. */
#include <stdlib.h>

#include "check.h"
#include "cli/paths.h"

TEST(path_join_resolves_against_the_base) {
    char *p;
    p = cli_path_join("/workspace", "a b/c.txt"); CHECK_STR(p, "/workspace/a b/c.txt"); free(p);
    p = cli_path_join("/workspace/", "x"); CHECK_STR(p, "/workspace/x"); free(p);
    p = cli_path_join("/workspace", "/etc/hosts"); CHECK_STR(p, "/etc/hosts"); free(p);
    p = cli_path_join("/workspace", ""); CHECK_STR(p, "/workspace"); free(p);
    p = cli_path_join(".", "f"); CHECK_STR(p, "./f"); free(p);
    p = cli_path_join("", "f"); CHECK_STR(p, "f"); free(p);
}

TEST(path_split_gives_tar_dir_and_name) {
    char *d, *n;
    CHECK_INT(cli_path_split("/w/a/", &d, &n), 0); CHECK_STR(d, "/w"); CHECK_STR(n, "a"); free(d); free(n);
    CHECK_INT(cli_path_split("a", &d, &n), 0); CHECK_STR(d, "."); CHECK_STR(n, "a"); free(d); free(n);
    CHECK_INT(cli_path_split("/a", &d, &n), 0); CHECK_STR(d, "/"); CHECK_STR(n, "a"); free(d); free(n);
    CHECK_INT(cli_path_split("/", &d, &n), 0); CHECK_STR(d, "/"); CHECK_STR(n, "."); free(d); free(n);
    CHECK_INT(cli_path_split("./", &d, &n), 0); CHECK_STR(d, "."); CHECK_STR(n, "."); free(d); free(n);
    CHECK_INT(cli_path_split("w/..", &d, &n), 0); CHECK_STR(d, "w/.."); CHECK_STR(n, "."); free(d); free(n);
    CHECK_INT(cli_path_split("./x y", &d, &n), 0); CHECK_STR(d, "."); CHECK_STR(n, "x y"); free(d); free(n);
    CHECK_INT(cli_path_split("", &d, &n), -1);
}

TEST(clean_rel_refuses_absolute_and_dotdot) {
    char out[64];
    CHECK_INT(cli_path_clean_rel("./a//b/./c/", out, sizeof(out)), 0); CHECK_STR(out, "a/b/c");
    CHECK_INT(cli_path_clean_rel("./", out, sizeof(out)), 0); CHECK_STR(out, "");
    CHECK_INT(cli_path_clean_rel("/etc/passwd", out, sizeof(out)), -1);
    CHECK_INT(cli_path_clean_rel("../x", out, sizeof(out)), -2);
    CHECK_INT(cli_path_clean_rel("a/../../x", out, sizeof(out)), -2);
    CHECK_INT(cli_path_clean_rel("a/..", out, sizeof(out)), -2);
    CHECK_INT(cli_path_clean_rel("a..b/..c", out, sizeof(out)), 0); CHECK_STR(out, "a..b/..c");
    CHECK_INT(cli_path_clean_rel("abcdefgh", out, 4), -3);
}

TEST(link_targets_must_stay_inside) {
    CHECK(cli_link_target_inside("a/b/l", "../c"));
    CHECK(cli_link_target_inside("a/b/l", "../../c"));
    CHECK(cli_link_target_inside("a/l", "b/c"));
    CHECK(cli_link_target_inside("l", "."));
    CHECK(!cli_link_target_inside("a/b/l", "../../../c"));
    CHECK(!cli_link_target_inside("l", ".."));
    CHECK(!cli_link_target_inside("l", "/etc/passwd"));
    CHECK(!cli_link_target_inside("a/l", "b/../../x"));   /* ".." after a component */
    CHECK(!cli_link_target_inside("l", ""));
}

TEST(base_name_like_ls) {
    static const char *const cases[][2] = {{"/w/a", "a"}, {"/w/a/", "a"}, {"a", "a"}, {"/", "/"},
                                           {"//", "/"}, {".", "."}, {"/w/..", ".."}, {"x y/\xc3\xa9", "\xc3\xa9"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *b = cli_base_name(cases[i][0]);
        CHECK_STR(b, cases[i][1]);
        free(b);
    }
}
