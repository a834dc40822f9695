/* cli/fdio.h — whole writes to a file descriptor, for what the CLI writes to stdout,
 * stderr and extracted files. */
#ifndef YAO_CLI_FDIO_H
#define YAO_CLI_FDIO_H

#include <stddef.h>

/* Write all n bytes to fd, retrying on EINTR and short writes; -1 with errno set. */
int cli_write_all(int fd, const void *data, size_t n);

#endif
