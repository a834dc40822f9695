/* cli/listing.c — ls and stat of a sandbox path (see listing.h): the portable listing
 * script, the parser of its output, and the "drwxr-xr-x" mode string. */
#include "cli/listing.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/paths.h"

/* Free a listing. */
void cli_file_infos_free(struct cli_file_info *v, size_t n) {
    if (!v) return;
    for (size_t i = 0; i < n; i++) { free(v[i].name); free(v[i].link); }
    free(v);
}

/* The listing (see the header). Kept to what busybox ash and busybox stat do as well as
 * dash/bash and GNU stat, and short (it travels in the exec URL, which lws caps): e NAMES
 * prints a group — one `stat -c` for all its names (one process, not one per entry), and
 * when that fails because an entry vanished meanwhile (its lines would no longer match the
 * names), one stat per entry with "-" for the missing; readlink for link targets ("&&echo
 * ." keeps a target's trailing newlines from $(...)). The groups of a directory come from
 * three globs (plain names, dot names, dot-dot names: "." and ".." excluded); a glob that
 * matched nothing stays as it is, and names nothing that exists. */
const char CLI_LIST_SCRIPT[] =
    "p=$2\n"
    "command -v stat >/dev/null||{ echo stat is not available in the sandbox image >&2;exit 127;}\n"
    "[ -e \"$p\" ]||[ -L \"$p\" ]||{ printf '%s: No such file or directory\\n' \"$p\" >&2;exit 1;}\n"
    "e(){ f=$1;shift;echo $#\n"
    "for x;do t=;[ -z \"$f\" ]&&[ -L \"$x\" ]&&t=$(readlink -- \"$x\"&&echo .)&&t=${t%??}\n"
    "printf '%s\\0%s\\0' \"$x\" \"$t\";done\n"
    "if s=$(stat $f -c '%f %s %Y' -- \"$@\" 2>/dev/null);then echo \"$s\"\n"
    "else for x;do stat $f -c '%f %s %Y' -- \"$x\" 2>/dev/null||echo -;done;fi;}\n"
    "if [ $1 = ls ]&&[ -e \"$p\" ];then e -L \"$p\";else e '' \"$p\";fi\n"
    "[ $1 = ls ]&&[ -d \"$p\" ]||exit 0\n"
    "CDPATH= cd -- \"$p\"&&[ -r . ]||{ printf '%s: Permission denied\\n' \"$p\" >&2;exit 1;}\n"
    "for g in '*' '.[!.]*' '..?*';do set -- $g;{ [ -e \"$1\" ]||[ -L \"$1\" ];}&&e '' \"$@\";done\n"
    "exit 0\n";

/* Type letter of a raw st_mode (S_IFMT bits, as stat's %f gives them). */
static char type_of_mode(unsigned long m) {
    switch (m & 0170000) {
    case 0100000: return 'f';
    case 0040000: return 'd';
    case 0120000: return 'l';
    case 0010000: return 'p';
    case 0140000: return 's';
    case 0020000: return 'c';
    case 0060000: return 'b';
    default: return '?';
    }
}

/* One "MODE SIZE MTIME" line (hex, decimal, decimal seconds). 0, 1 for "-", or -1. */
static int parse_stat_line(const char *l, struct cli_file_info *fi) {
    char *end;
    if (!strcmp(l, "-")) return 1;
    if (!isxdigit((unsigned char)l[0])) return -1;
    errno = 0;
    unsigned long m = strtoul(l, &end, 16);
    if (errno || *end != ' ' || !isdigit((unsigned char)end[1])) return -1;
    uint64_t size = strtoull(end + 1, &end, 10);
    if (errno || *end != ' ') return -1;
    const char *t = end + 1;
    if (!(isdigit((unsigned char)t[0]) || (t[0] == '-' && isdigit((unsigned char)t[1])))) return -1;
    long long sec = strtoll(t, &end, 10);
    if (errno || *end || sec > INT64_MAX / 1000 || sec < INT64_MIN / 1000) return -1;
    fi->type = type_of_mode(m);
    fi->mode = (unsigned)(m & 07777);
    fi->size = size;
    fi->mtime_ms = (int64_t)sec * 1000;
    return 0;
}

/* Parse a listing (see header). */
int cli_listing_parse(const char *buf, size_t len, struct cli_file_info **out, size_t *n) {
    struct cli_file_info *v = NULL;
    size_t cnt = 0, cap = 0, pos = 0;
    int first_group = 1;
    *out = NULL;
    *n = 0;
    while (pos < len) {
        /* the count */
        const char *nl = memchr(buf + pos, '\n', len - pos);
        if (!nl || nl == buf + pos) goto bad;
        char num[24];
        size_t nlen = (size_t)(nl - (buf + pos));
        if (nlen >= sizeof(num)) goto bad;
        memcpy(num, buf + pos, nlen);
        num[nlen] = '\0';
        if (strspn(num, "0123456789") != nlen) goto bad;
        unsigned long long k = strtoull(num, NULL, 10);
        if (k > len) goto bad;                        /* each entry takes bytes */
        pos = (size_t)(nl + 1 - buf);
        if (first_group && k != 1) goto bad;
        if (cnt + k > cap) {
            size_t ncap = cap ? cap : 16;
            while (ncap < cnt + k) ncap *= 2;
            struct cli_file_info *nv = realloc(v, ncap * sizeof(*nv));
            if (!nv) goto bad;
            v = nv;
            cap = ncap;
        }
        /* k names with link targets */
        size_t base = cnt;
        for (unsigned long long i = 0; i < k; i++) {
            const char *z1 = memchr(buf + pos, '\0', len - pos);
            if (!z1 || z1 == buf + pos) goto bad;     /* names are never empty */
            const char *lnk = z1 + 1;
            const char *z2 = lnk < buf + len ? memchr(lnk, '\0', (size_t)(buf + len - lnk)) : NULL;
            if (!z2) goto bad;
            memset(&v[cnt], 0, sizeof(v[cnt]));
            v[cnt].name = first_group ? cli_base_name(buf + pos) : strdup(buf + pos);
            v[cnt].link = strdup(lnk);
            cnt++;
            if (!v[cnt - 1].name || !v[cnt - 1].link) goto bad;
            pos = (size_t)(z2 + 1 - buf);
        }
        /* k stat lines, in the same order; a vanished entry is dropped */
        size_t keep = base;
        for (size_t i = base; i < cnt; i++) {
            const char *e = memchr(buf + pos, '\n', len - pos);
            char line[96];
            if (!e || (size_t)(e - (buf + pos)) >= sizeof(line)) goto bad;
            memcpy(line, buf + pos, (size_t)(e - (buf + pos)));
            line[e - (buf + pos)] = '\0';
            pos = (size_t)(e + 1 - buf);
            int r = parse_stat_line(line, &v[i]);
            if (r < 0) goto bad;
            if (r == 1) {
                free(v[i].name);
                free(v[i].link);
                v[i].name = v[i].link = NULL;
                continue;
            }
            if (v[i].type != 'l') v[i].link[0] = '\0';
            if (keep != i) {
                v[keep] = v[i];
                v[i].name = v[i].link = NULL;
            }
            keep++;
        }
        if (first_group && keep == base) { cnt = keep; goto bad; }   /* the path itself vanished */
        cnt = keep;
        first_group = 0;
    }
    if (!cnt) {
        free(v);
        v = NULL;
    }
    *out = v;
    *n = cnt;
    return 0;
bad:
    cli_file_infos_free(v, cnt);
    return -1;
}

/* "drwxr-xr-x" for a type and mode. */
void cli_mode_string(char type, unsigned mode, char *out) {
    const char *types = "f-dd" "ll" "pp" "ss" "cc" "bb";
    out[0] = '?';
    for (size_t i = 0; types[i]; i += 2) if (types[i] == type) { out[0] = types[i + 1]; break; }
    static const char rwx[] = "rwxrwxrwx";
    for (int i = 0; i < 9; i++) out[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
    if (mode & 04000) out[3] = out[3] == 'x' ? 's' : 'S';
    if (mode & 02000) out[6] = out[6] == 'x' ? 's' : 'S';
    if (mode & 01000) out[9] = out[9] == 'x' ? 't' : 'T';
    out[10] = '\0';
}
