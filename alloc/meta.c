/* Out-of-band metadata: slab records, bitmaps, thread caches, group records. Bump-allocated
 * from its own mappings (never from the heap it describes) with exact-size free lists, so a
 * stray write past a user block can never reach allocator state. */
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define META_CHUNK ((size_t)4 << 20)
#define META_ALIGN 64
#define META_BUCKETS 256 /* free lists for sizes up to 256 * 64 B */

static tp_lock_t meta_lock = TP_LOCK_INIT;
static char *cur, *end;
static void *free_lists[META_BUCKETS];
static size_t total;

void *_tp_meta_alloc(size_t size) {
  size = (size + META_ALIGN - 1) & ~(size_t)(META_ALIGN - 1);
  size_t b = size / META_ALIGN;
  _tp_lock(&meta_lock);
  void *p = NULL;
  if (b < META_BUCKETS && free_lists[b] != NULL) {
    p = free_lists[b];
    free_lists[b] = *(void **)p;
    _tp_unlock(&meta_lock);
    memset(p, 0, size);
    return p;
  }
  if (cur == NULL || (size_t)(end - cur) < size) {
    size_t len = size > META_CHUNK ? (size + META_CHUNK - 1) & ~(META_CHUNK - 1) : META_CHUNK;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      _tp_unlock(&meta_lock);
      return NULL;
    }
    cur = m;
    end = m + len;
  }
  p = cur;
  cur += size;
  total += size;
  _tp_unlock(&meta_lock);
  return p; /* fresh anonymous memory is zero */
}

void _tp_meta_free(void *p, size_t size) {
  if (p == NULL) return;
  size = (size + META_ALIGN - 1) & ~(size_t)(META_ALIGN - 1);
  size_t b = size / META_ALIGN;
  if (b >= META_BUCKETS) return; /* large metadata is kept (rare: per-block maps) */
  _tp_lock(&meta_lock);
  *(void **)p = free_lists[b];
  free_lists[b] = p;
  _tp_unlock(&meta_lock);
}

size_t _tp_meta_bytes(void) { return total; }
void _tp_meta_prefork(void) { _tp_lock(&meta_lock); }
void _tp_meta_postfork(int child) {
  if (child) _tp_lock_reinit(&meta_lock);
  else _tp_unlock(&meta_lock);
}
