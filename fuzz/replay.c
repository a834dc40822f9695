/* fuzz/replay.c — a main() for a fuzz target without libFuzzer: feeds every regular file
 * in each directory (or each file) given on the command line to LLVMFuzzerTestOneInput,
 * in name order, so saved crashes (fuzz/regressions/<target>/) and the seed corpus
 * (fuzz/corpus/<target>/) run as ordinary tests under gcc + ASan/UBSan or valgrind.
 * A property violation aborts, a sanitizer report fails the process; otherwise it prints
 * "N passed, 0 failed" and exits 0. A missing or empty directory counts as no inputs. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Read a whole file (at most 16 MiB). 0 or -1. */
static int read_all(const char *path, uint8_t **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;

    if (!f) return -1;
    for (;;) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 4096;
            uint8_t *nb;
            if (ncap > (16u << 20) + 1 || !(nb = realloc(buf, ncap))) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = nb;
            cap = ncap;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    fclose(f);
    /* An exact-size copy, so ASan sees a read past the end as libFuzzer would. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) { free(buf); return -1; }
    if (n) memcpy(exact, buf, n);
    free(buf);
    *out = exact;
    *len = n;
    return 0;
}

static int run_file(const char *path) {
    uint8_t *data;
    size_t len;
    if (read_all(path, &data, &len) != 0) {
        fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, sorted. Returns the count run, or -1 on a read error. */
static int run_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0;
    int count = 0;

    if (!d) return errno == ENOENT ? 0 : -1;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char **nn = realloc(names, (n + 1) * sizeof(*names));
        if (!nn) break;
        names = nn;
        names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (!names[n]) break;
        sprintf(names[n], "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof(*names), by_name);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (count >= 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(names[i]) == 0) count++;
            else count = -1;
        }
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv) {
    int total = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int n;
        if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode)) n = run_file(argv[i]) == 0 ? 1 : -1;
        else n = run_dir(argv[i]);
        if (n < 0) {
            printf("%d passed, 1 failed\n", total);
            return 1;
        }
        total += n;
    }
    printf("%d passed, 0 failed\n", total);
    return 0;
}
