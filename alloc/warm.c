/* TLB warming. Hardware prefetchers stop at page boundaries and do not walk page tables; a
 * software prefetch does walk (and is dropped rather than fault), so one prefetch per page
 * loads the translation before a phase needs it. It hides walk latency; it adds no capacity. */
#include "front.h"

static inline size_t page_of(uintptr_t a) {
  tp_hpage_t *h = _tp_hpage_of((const void *)a);
  return (h && h->source != TP_SRC_NONE && h->source != TP_SRC_4K) ? TP_HPAGE : TP_PAGE;
}

void tp_warm(const void *p) { __builtin_prefetch(p, 0, 3); }

void tp_warm_range(const void *p, size_t n) {
  if (n == 0) return;
  uintptr_t a = (uintptr_t)p, end = a + n;
  if (end < a) end = UINTPTR_MAX;
  while (a < end) {
    __builtin_prefetch((const void *)a, 0, 3);
    size_t pg = page_of(a);
    uintptr_t next = (a & ~(uintptr_t)(pg - 1)) + pg;
    if (next <= a) break;
    a = next;
  }
}

typedef struct { unsigned id; } warm_arg_t;

static void warm_hpage(tp_hpage_t *h, void *arg) {
  unsigned id = ((warm_arg_t *)arg)->id;
  if (h->source == TP_SRC_NONE) return;
  int step4k = h->source == TP_SRC_4K;
  if (h->state == TP_HP_LARGE) {
    tp_slab_t *s = h->slot_slab[0];
    if (s && s->group == id) tp_warm_range((const void *)s->base, (size_t)s->nhpages * TP_HPAGE);
    return;
  }
  if (h->state != TP_HP_ACTIVE) return;
  for (unsigned i = 0; i < TP_SLOTS; i++) {
    tp_slab_t *s = h->slot_slab[i];
    if (s == NULL || s->group != id) continue;
    uintptr_t slot = h->addr + ((uintptr_t)i << TP_SLOT_SHIFT);
    if (!step4k) {
      __builtin_prefetch((const void *)slot, 0, 3);
      return; /* one prefetch covers the whole 2 MiB page */
    }
    for (uintptr_t a = slot; a < slot + TP_SLOT; a += TP_PAGE) __builtin_prefetch((const void *)a, 0, 3);
  }
}

void tp_group_warm(const tp_group_t *g) {
  if (g == NULL || atomic_load(&_tp_ready) == 0) return;
  warm_arg_t a = {_tp_group_handle_id(g)};
  _tp_lock(&_tp_heap_lock);
  _tp_heap_foreach(warm_hpage, &a);
  _tp_unlock(&_tp_heap_lock);
}

size_t tp_chase_warm(const void *head, const void *(*next)(const void *node),
                     void (*visit)(const void *node, void *arg), void *arg, unsigned ahead) {
  const void *lead = head;
  for (unsigned i = 0; i < ahead && lead; i++) {
    lead = next(lead);
    if (lead) tp_warm(lead);
  }
  size_t n = 0;
  for (const void *cur = head; cur; cur = next(cur), n++) {
    if (lead) {
      lead = next(lead);
      if (lead) tp_warm(lead);
    }
    if (visit) visit(cur, arg);
  }
  return n;
}
