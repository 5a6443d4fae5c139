/* Size classes and site keys, shared by the allocator and `tlbpack profile` (which must split
 * sites exactly as the allocator does). A site is a return address; behind a wrapper (one
 * function that every caller allocates through: xmalloc, zmalloc, PyMem_RawMalloc) every
 * allocation has the same return address, so the allocator tells the callers apart by site +
 * size class instead: the key is the address with class + 1 in the bits above the 47-bit
 * user address space. Pure: no allocator state. */
#ifndef TP_SITEKEY_H
#define TP_SITEKEY_H

#include <stddef.h>
#include <stdint.h>

#define TP_KEY_SHIFT 48

static inline unsigned _tp_class_of(size_t n) {
  if (n <= 128) return n == 0 ? 0 : (unsigned)((n - 1) >> 4);
  size_t x = n - 1;
  unsigned e = 63u - (unsigned)__builtin_clzl(x);
  size_t base = (size_t)1 << e;
  unsigned k = (unsigned)((x - base) >> (e - 2));
  return 8 + (e - 7) * 4 + k;
}

/* The object size of class c (16..128 in steps of 16, then four classes per power of two). */
static inline size_t _tp_class_size(unsigned c) {
  if (c < 8) return (size_t)(c + 1) * 16;
  unsigned e = 7 + (c - 8) / 4, k = (c - 8) % 4;
  return ((size_t)1 << e) + (k + 1) * (((size_t)1 << e) >> 2);
}

static inline uintptr_t _tp_key_of(uintptr_t site, unsigned c) { return site | (uintptr_t)(c + 1) << TP_KEY_SHIFT; }
static inline uintptr_t _tp_key_site(uintptr_t key) { return key & (((uintptr_t)1 << TP_KEY_SHIFT) - 1); }
/* The class of a site + class key, -1 for a whole site. */
static inline int _tp_key_class(uintptr_t key) { return (int)(key >> TP_KEY_SHIFT) - 1; }

/* A wrapper, from the classes (bit c: class c) its allocations were seen in: 4 classes or more,
 * the largest at least 64 times the smallest (a wrapper serves small nodes and kilobyte
 * buffers alike). One call site whose size varies (a value of 64 to 256 bytes, a string copy
 * of 16 to 512) spans a narrower band and stays one site: its classes belong together. */
#define TP_WRAPPER_CLASSES 4
#define TP_WRAPPER_SPREAD 256
static inline int _tp_wrapper_classes(uint64_t mask) {
  if (__builtin_popcountll(mask) < TP_WRAPPER_CLASSES) return 0;
  unsigned lo = (unsigned)__builtin_ctzll(mask), hi = 63u - (unsigned)__builtin_clzll(mask);
  return _tp_class_size(hi) >= TP_WRAPPER_SPREAD * _tp_class_size(lo);
}

#endif
