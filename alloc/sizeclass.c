/* Size classes (sitekey.h): 16..128 in steps of 16, then four per power of two, eight from 4 KiB to
 * 32 KiB, four again up to 256 KiB.
 * Each class's slab is the shortest run of 32 KiB slots that wastes at most 1/8 of itself (1/32
 * from 4 KiB up, where up to 4 slots allow it). */
#include "base.h"

tp_class_t _tp_classes[TP_NCLASSES];
uint8_t _tp_fast_class[TP_FAST_N];
uint8_t _tp_fast_lo[TP_NCLASSES], _tp_fast_end[TP_NCLASSES];


/* The shortest run of at most `most` slots that holds a block of `size` and wastes at most
 * 1/div of itself; 0 when there is none. */
static unsigned shortest_slab(uint32_t size, unsigned most, unsigned div) {
  for (unsigned n = 1; n <= most; n++) {
    size_t bytes = n * TP_SLOT, nobj = bytes / size;
    if (nobj > 0 && (bytes - nobj * size) * div <= bytes) return n;
  }
  return 0;
}

/* What a kilobyte bin keeps: 256 KiB, and 128 KiB in the classes of eight per power of two
 * (4-32 KiB), so that a thread's bins keep as much per power of two as with four. A thread that
 * frees and allocates blocks of random sizes leaves each bin part full: twice the bins at 256
 * KiB held a third more in its caches (one thread keeping 20 000 blocks of 8 B-16 KiB: 1.2-1.3
 * MB with four classes per power of two, 1.7-1.8 MB with eight, 1.2-1.3 MB at 128 KiB). */
static uint32_t kilobyte_bin_bytes(uint32_t size) {
  int fine = size > (1u << TP_CLASS_FINE_LO) && size <= (1u << TP_CLASS_FINE_HI);
  return fine ? 128u << 10 : 256u << 10;
}

void _tp_classes_init(void) {
  for (unsigned c = 0; c < TP_NCLASSES; c++) {
    tp_class_t *k = &_tp_classes[c];
    k->size = (uint32_t)_tp_class_size(c);
    /* Classes of 4 KiB and up take the shortest run of up to 4 slots that wastes at most 1/32
     * of itself, where there is one: a 5120-byte block (a page cache of 4 KiB pages and their
     * headers, as sqlite3's) leaves 2 KiB of each 32 KiB slot unused, a sixteenth of the cache,
     * and 3 slots hold 19 blocks with 1 KiB left. Smaller classes waste little in one slot, and
     * a longer first slab for every group and class would cost programs with many sites more
     * than it saves. */
    unsigned n = k->size >= 4096 ? shortest_slab(k->size, 4, 32) : 0;
    if (n == 0) n = shortest_slab(k->size, TP_SLOTS - 1, 8);
    if (n == 0) n = TP_SLOTS;
    k->nslots = (uint8_t)n;
    k->nobj = (uint32_t)((n * TP_SLOT) / k->size);
    k->nwords = (uint8_t)((k->nobj + 63) / 64);
    k->recip = _tp_recip(k->size);
    /* Thread caches hold more of the small, frequent classes, and none above 64 KiB: a freed
     * block that large, parked in a cache, would pin a whole slab run of its own. */
    k->tcache_cap = k->size <= 1024 ? 64 : k->size <= 16384 ? 16 : k->size <= 65536 ? 4 : 0;
    /* Freed kilobyte blocks are kept up to 256 KiB a bin (64 at most; kilobyte_bin_bytes): a program that
     * allocates a batch of them and frees it again (a request's buffers, a pass's nodes) then
     * cycles through its cache instead of through the slabs; refills stay tcache_cap / 2. */
    uint32_t lim = k->size <= 1024 || k->tcache_cap == 0 ? k->tcache_cap : (uint32_t)(kilobyte_bin_bytes(k->size) / k->size);
    k->tcache_limit = (uint16_t)(lim > 64 ? 64 : lim < k->tcache_cap ? k->tcache_cap : lim);
    /* A bin of a class up to 1 KiB that keeps overflowing (a program that allocates a batch of
     * hundreds of blocks and frees it again) grows, doubling, to 512 blocks or 64 KiB of them:
     * each overflow would send half the bin back to the slabs and the next batch refill it. */
    uint32_t grow = k->size <= 1024 ? (64u << 10) / k->size : 0;
    k->tcache_grow = (uint16_t)(grow > 512 ? 512 : grow < k->tcache_limit ? k->tcache_limit : grow);
  }
  for (unsigned i = 0; i <= TP_FAST_MAX / 16; i++) _tp_fast_class[i] = (uint8_t)_tp_class_of(i ? i * 16 : 1);
  for (unsigned i = TP_FAST_SMALL_N; i < TP_FAST_N; i++) { /* the largest size of entry i */
    unsigned j = i - TP_FAST_SMALL_N, e = 10 + j / 8;
    _tp_fast_class[i] = (uint8_t)_tp_class_of(((size_t)1 << e) + (j % 8 + 1) * (((size_t)1 << e) >> 3));
  }
  for (unsigned i = TP_FAST_N; i-- > 0;) { /* entries of one class are consecutive */
    unsigned c = _tp_fast_class[i];
    if (_tp_fast_end[c] == 0) _tp_fast_end[c] = (uint8_t)(i + 1);
    _tp_fast_lo[c] = (uint8_t)i;
  }
}
