/* The slow path of _tp_lock (base.h). */
#include "base.h"

/* A held lock: up to TP_LOCK_SPINS tries a pause apart (a few microseconds, longer than any
 * critical section here), then a sleep in pthread_mutex_lock. */
#define TP_LOCK_SPINS 128
void _tp_lock_contended(tp_lock_t *l) {
  for (int i = 0; i < TP_LOCK_SPINS; i++) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (pthread_mutex_trylock(l) == 0) return;
  }
  pthread_mutex_lock(l);
}
