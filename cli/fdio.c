/* cli/fdio.c — whole writes to a file descriptor (see fdio.h). */
#include "cli/fdio.h"

#include <errno.h>
#include <unistd.h>

int cli_write_all(int fd, const void *data, size_t n) {
    const unsigned char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}
