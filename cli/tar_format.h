/* cli/tar_format.h — what the CLI's tar writer (tar_write.c) and extractor (tar_read.c)
 * share of the format: the block size, the largest pax extended header either handles,
 * and the zero padding after an entry's data. Private to those two files. */
#ifndef YAO_CLI_TAR_FORMAT_H
#define YAO_CLI_TAR_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define TAR_BLOCK 512
#define TAR_PAX_MAX (1u << 20)       /* a pax extended header we write or accept */

/* Zero padding after n bytes of data up to the next block. */
static inline size_t tar_pad_of(uint64_t n) { return (size_t)((TAR_BLOCK - n % TAR_BLOCK) % TAR_BLOCK); }

#endif
