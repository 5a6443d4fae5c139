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

/* Classes: 16..128 in steps of 16 (0-7), four per power of two up to 4 KiB (8-27), eight per
 * power of two from 4 KiB to 32 KiB (28-51: a 4 KiB page and a small header, as SQLite's page
 * cache allocates, takes the 4608-byte class, not 5120), four per power of two up to 256 KiB
 * (52-63). 64 classes: a group's masks have a bit per class. */
#define TP_CLASS_FINE_LO 12 /* 2^12 < size <= 2^15: eight classes per power of two */
#define TP_CLASS_FINE_HI 15
#define TP_CLASS_FINE_FIRST 28
#define TP_CLASS_COARSE_FIRST 52
static inline unsigned _tp_class_of(size_t n) {
  if (n <= 128) return n == 0 ? 0 : (unsigned)((n - 1) >> 4);
  size_t x = n - 1;
  unsigned e = 63u - (unsigned)__builtin_clzl(x);
  if (e < TP_CLASS_FINE_LO) return 8 + (e - 7) * 4 + (unsigned)((x >> (e - 2)) & 3);
  if (e < TP_CLASS_FINE_HI) return TP_CLASS_FINE_FIRST + (e - TP_CLASS_FINE_LO) * 8 + (unsigned)((x >> (e - 3)) & 7);
  return TP_CLASS_COARSE_FIRST + (e - TP_CLASS_FINE_HI) * 4 + (unsigned)((x >> (e - 2)) & 3);
}

/* The object size of class c. */
static inline size_t _tp_class_size(unsigned c) {
  if (c < 8) return (size_t)(c + 1) * 16;
  unsigned e, k, per;
  if (c < TP_CLASS_FINE_FIRST) e = 7 + (c - 8) / 4, k = (c - 8) % 4, per = 2;
  else if (c < TP_CLASS_COARSE_FIRST) e = TP_CLASS_FINE_LO + (c - TP_CLASS_FINE_FIRST) / 8, k = (c - TP_CLASS_FINE_FIRST) % 8, per = 3;
  else e = TP_CLASS_FINE_HI + (c - TP_CLASS_COARSE_FIRST) / 4, k = (c - TP_CLASS_COARSE_FIRST) % 4, per = 2;
  return ((size_t)1 << e) + (k + 1) * (((size_t)1 << e) >> per);
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
