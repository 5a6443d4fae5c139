/* Short-lived threads and memory going back: ROUNDS rounds each start THREADS threads that
 * allocate, free some blocks themselves, hand the rest to the main thread (freed after the
 * thread has exited: frees into a dead thread's pages) and exit with objects still in their
 * caches. Then one large burst of 256 MiB is allocated, touched and freed.
 * Checks (on tlbpack, through tp_stats_get):
 *   - live bytes and objects back to the baseline (taken after round 0, once libc has cached
 *     its thread stacks) after every round and at the end;
 *   - huge pages mapped do not grow with the number of threads that have come and gone (caches
 *     of dead threads are reclaimed): the last round maps at most 16 MiB more on huge pages than
 *     the middle one (a heap that starts small moves onto huge pages over the first rounds);
 *     nor does the process's memory (RSS + hugetlb pages, which include the allocator's
 *     metadata): at most 32 MiB more after the last round than after the first;
 *   - after the burst is freed, mapped bytes fall back to within the retain limit (64 MiB by
 *     default) + 16 MiB of where they were, and the process's RSS + hugetlb pages follow.
 *
 * usage: thread_churn [ROUNDS [THREADS]]
 */
#include "tp_shim.h"
#include <pthread.h>
#include <stdint.h>

#define PER_THREAD 400
#define MIB (1024.0 * 1024.0)

typedef struct {
  int id;
  void *handed[PER_THREAD];
  int nhanded;
} job_t;

static void *worker(void *arg) {
  job_t *j = arg;
  unsigned long long rs = (unsigned long long)j->id * 7919 + 17;
  void *mine[PER_THREAD];
  for (int i = 0; i < PER_THREAD; i++) {
    size_t s = 1 + t_rand(&rs) % (i % 40 == 0 ? (300 << 10) : 2000);
    mine[i] = malloc(s);
    if (!mine[i]) T_DIE("thread_churn: malloc(%zu) failed", s);
    memset(mine[i], j->id, s < 256 ? s : 256);
  }
  j->nhanded = 0;
  for (int i = 0; i < PER_THREAD; i++) {
    if (i % 3 == 0) j->handed[j->nhanded++] = mine[i];  /* freed by main after we exit */
    else if (i % 3 == 1) free(mine[i]);
    else { void *p = malloc(64); free(mine[i]); mine[i] = p; j->handed[j->nhanded++] = p; }
  }
  return NULL;
}

static long status_kb(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = 0;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0 && line[n] == ':') v = atol(line + n + 1);
  if (f) fclose(f);
  return v;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 50;
  int nthreads = argc > 2 ? atoi(argv[2]) : 16;
  if (rounds < 2 || nthreads < 1 || nthreads > 512) {
    fprintf(stderr, "usage: thread_churn [ROUNDS >= 2 [THREADS 1..512]]\n");
    return 2;
  }
  tp_stats_t base, s, first = {0}, mid = {0};
  int have = t_stats(&base);
  printf("thread_churn: %d rounds x %d threads%s\n", rounds, nthreads, have ? "" : " (not on tlbpack: checks skipped)");
  fflush(stdout);
  job_t *jobs = calloc((size_t)nthreads, sizeof *jobs);
  pthread_t *t = calloc((size_t)nthreads, sizeof *t);
  int failures = 0;
  long rss_first = 0;
  if (have) t_stats(&base);  /* after stdout's buffer and the job table */
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < nthreads; i++) {
      jobs[i].id = r * nthreads + i;
      if (pthread_create(&t[i], NULL, worker, &jobs[i])) T_DIE("thread_churn: pthread_create failed");
    }
    for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < nthreads; i++)
      for (int k = 0; k < jobs[i].nhanded; k++) free(jobs[i].handed[k]);
    if (!have) continue;
    t_stats(&s);
    if (r == rounds / 2) mid = s;
    if (r == 0) {  /* libc caches thread stacks with their TLS blocks: the baseline comes after round 0 */
      first = base = s;
      rss_first = status_kb("VmRSS") + status_kb("HugetlbPages");
      continue;
    }
    if (s.live_bytes != base.live_bytes || s.live_objects != base.live_objects) {
      printf("thread_churn: FAIL: round %d: live bytes %zu (baseline %zu), objects %zu (baseline %zu)\n", r,
             s.live_bytes, base.live_bytes, s.live_objects, base.live_objects);
      failures++;
      break;
    }
  }
  if (have) {
    t_stats(&s);
    /* On huge pages: a 2 MiB page on 4 KiB pages counts whole in mapped_bytes but is resident
     * only where written (blocks of a site that writes little of them, kept for its next ones:
     * retained up to retain_mb by what they hold), and the RSS check below covers it. */
    size_t huge_mid = (mid.pages_hugetlbfs + mid.pages_thp) << 21, huge = (s.pages_hugetlbfs + s.pages_thp) << 21;
    printf("thread_churn: %d threads came and went; mapped %.1f MiB after round 1, %.1f MiB after round %d, %.1f "
           "after round %d (on huge pages %.1f, %.1f)\n",
           rounds * nthreads, first.mapped_bytes / MIB, mid.mapped_bytes / MIB, rounds / 2 + 1, s.mapped_bytes / MIB,
           rounds, huge_mid / MIB, huge / MIB);
    if (huge > huge_mid + ((size_t)16 << 20)) {
      printf("thread_churn: FAIL: huge pages mapped grow with threads that have exited (dead threads' caches kept?)\n");
      failures++;
    }
    long rss_last = status_kb("VmRSS") + status_kb("HugetlbPages");
    printf("thread_churn: RSS + hugetlb pages %.1f MiB after round 1, %.1f MiB after round %d\n", rss_first / 1024.0,
           rss_last / 1024.0, rounds);
    if (rss_last > rss_first + 32 * 1024) {
      printf("thread_churn: FAIL: memory grows with threads that have exited (%.0f KiB per thread; allocator metadata?)\n",
             (double)(rss_last - rss_first) / ((rounds - 1) * nthreads));
      failures++;
    }
  }

  /* A burst: 256 MiB in blocks of 64 KiB .. 4 MiB, touched, then freed. */
  tp_stats_t before_burst = s, peak, after;
  long rss0 = status_kb("VmRSS") + status_kb("HugetlbPages");
  enum { NB = 400 };
  void *b[NB];
  size_t total = 0;
  int nb = 0;
  for (; nb < NB && total < ((size_t)256 << 20); nb++) {
    size_t sz = (size_t)(64 << 10) << (nb % 7);
    b[nb] = malloc(sz);
    if (!b[nb]) T_DIE("thread_churn: malloc(%zu) failed in the burst", sz);
    memset(b[nb], 1, sz);
    total += sz;
  }
  long rss1 = status_kb("VmRSS") + status_kb("HugetlbPages");
  if (have) t_stats(&peak);
  for (int i = 0; i < nb; i++) free(b[i]);
  long rss2 = status_kb("VmRSS") + status_kb("HugetlbPages");
  printf("thread_churn: burst of %.0f MiB: RSS+hugetlb %.1f -> %.1f -> %.1f MiB\n", total / MIB, rss0 / 1024.0,
         rss1 / 1024.0, rss2 / 1024.0);
  if (have) {
    t_stats(&after);
    printf("thread_churn: mapped %.1f -> %.1f -> %.1f MiB, pages returned %zu\n", before_burst.mapped_bytes / MIB,
           peak.mapped_bytes / MIB, after.mapped_bytes / MIB, after.pages_returned);
    if (after.mapped_bytes > before_burst.mapped_bytes + ((size_t)80 << 20)) {
      printf("thread_churn: FAIL: %.1f MiB still mapped after freeing the burst (retain limit 64 MiB)\n",
             after.mapped_bytes / MIB);
      failures++;
    }
    if (rss2 > rss0 + 80 * 1024) {
      printf("thread_churn: FAIL: RSS + hugetlb pages did not fall after freeing the burst\n");
      failures++;
    }
    if (after.live_bytes != base.live_bytes || after.live_objects != base.live_objects) {
      printf("thread_churn: FAIL: live bytes/objects not back to the baseline at the end\n");
      failures++;
    }
  }
  free(jobs);
  free(t);
  printf("thread_churn: %s\n", failures ? "FAILED" : "OK");
  return failures ? 1 : (have ? 0 : 3);
}
