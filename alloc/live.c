/* Bytes out of the slabs and runs and their peak (base.h, "live bytes"): the slabs and the
 * thread caches count here as memory moves, and stats read the totals. */
#include "base.h"

_Atomic ptrdiff_t _tp_peak_live;
_Atomic ptrdiff_t _tp_global_live;

static void publish(ptrdiff_t bytes) {
  ptrdiff_t now = atomic_fetch_add_explicit(&_tp_global_live, bytes, memory_order_relaxed) + bytes;
  if (bytes <= 0) return;
  ptrdiff_t peak = atomic_load_explicit(&_tp_peak_live, memory_order_relaxed);
  while (now > peak && !atomic_compare_exchange_weak(&_tp_peak_live, &peak, now)) {
  }
}

/* Each thread gathers its changes and publishes them once they pass 64 KiB either way: the
 * shared counter's line is not written by every thread at every cache fill and flush. */
#define TP_STATS_BATCH ((ptrdiff_t)64 << 10)
static __thread ptrdiff_t pending __attribute__((tls_model("initial-exec")));

void _tp_stats_out(ptrdiff_t bytes) {
  ptrdiff_t p = pending + bytes;
  if (p < TP_STATS_BATCH && p > -TP_STATS_BATCH) {
    pending = p;
    return;
  }
  pending = 0;
  publish(p);
}

void _tp_stats_out_flush(void) {
  ptrdiff_t p = pending;
  pending = 0;
  if (p) publish(p);
}
