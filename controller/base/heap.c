/* base/heap.c — malloc_trim and mallinfo2 behind one test of "is this glibc's malloc"
 * (see heap.h). */
#include "base/heap.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define HEAP_REPLACED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAP_REPLACED 1
#endif

#if defined(__GLIBC__) && !defined(HEAP_REPLACED)
#include <malloc.h>
#define HEAP_GLIBC 1
#endif

void heap_trim(void) {
#ifdef HEAP_GLIBC
    malloc_trim(0);
#endif
}

int heap_usage(size_t *inuse, size_t *held_free) {
#ifdef HEAP_GLIBC
    struct mallinfo2 mi = mallinfo2();
    *inuse = mi.uordblks + mi.hblkhd;
    *held_free = mi.fordblks;
    return 0;
#else
    (void)inuse;
    (void)held_free;
    return -1;
#endif
}
