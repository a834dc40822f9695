/* base/heap.h — the heap as glibc's malloc keeps it: giving free pages back and reading
 * how much is in use. Both are no-ops when malloc is not glibc's (another libc, or a
 * sanitizer build whose allocator replaces it: glibc's arenas are then never set up,
 * and malloc_trim walking them crashes). base/ includes nothing of the project's. */
#ifndef YAO_BASE_HEAP_H
#define YAO_BASE_HEAP_H

#include <stddef.h>

/* Return the whole free pages inside malloc's arenas to the kernel (malloc_trim(0)). */
void heap_trim(void);

/* Bytes allocated and not freed, and bytes free but still held by malloc. Returns 0,
 * or -1 (both left untouched) when the allocator cannot say. */
int heap_usage(size_t *inuse, size_t *held_free);

#endif
