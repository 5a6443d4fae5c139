/* Visibility: counters gathered from the thread caches and the heap, printed as text or JSON
 * through one function, and the regions file that `tlbsim --regions` reads. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "front.h"

void tp_stats_get(tp_stats_t *st) {
  memset(st, 0, sizeof *st);
  if (atomic_load(&_tp_ready) == 0) return;
  /* Discovery loads libhugetlbfs and libnuma, which allocate: a program that reads the stats
   * has them loaded first, so that what it measures between two reads is its own. */
  _tp_os_discover();
  size_t nm, nf, ba;
  ptrdiff_t lb;
  _tp_stats_out_flush();
  _tp_tcache_sum(&nm, &nf, &ba, &lb);
  _tp_lock(&_tp_heap_lock);
  tp_heap_counters_t c = _tp_heap_ctr;
  _tp_unlock(&_tp_heap_lock);
  st->allocated_total = ba;
  st->live_bytes = lb > 0 ? (size_t)lb : 0;
  st->live_objects = nm >= nf ? nm - nf : 0;
  ptrdiff_t peak = atomic_load(&_tp_peak_live);
  while (lb > peak && !atomic_compare_exchange_weak(&_tp_peak_live, &peak, lb)) {
  }
  st->peak_live_bytes = (size_t)(peak > lb ? peak : lb);
  st->pages_hugetlbfs = c.pages_by_source[TP_SRC_HUGETLB] + c.pages_by_source[TP_SRC_1G];
  st->pages_thp = c.pages_by_source[TP_SRC_THP];
  st->pages_4k = c.pages_by_source[TP_SRC_4K];
  st->mapped_bytes = (st->pages_hugetlbfs + st->pages_thp + st->pages_4k) * TP_HPAGE;
  st->fallbacks = c.fallbacks;
  st->pages_returned = c.pages_returned;
  st->density = st->mapped_bytes ? (double)st->live_bytes / (double)st->mapped_bytes : 0.0;
}

/* Mappings the process has now (lines of /proc/self/maps; -1 when unreadable): what
 * vm.max_map_count bounds. Read with plain read(): no malloc. */
static long count_mappings(void) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[4096];
  long n = 0;
  ssize_t r;
  while ((r = read(fd, buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i < r; i++) n += buf[i] == '\n';
  close(fd);
  return n;
}

static const char *pool_name(void) {
  static const char *names[] = {"auto", "hugetlbfs", "thp", "4k"};
  return names[_tp_opt.pool & 3];
}

/* Data on 4 KiB pages: the hpages on 4 KiB pages that hold blocks the program has (handed out,
 * not in a thread cache), the bytes of those blocks, and of those hpages the ones held by the
 * groups start-small leaves on 4 KiB pages only while young (runs.c, start_carve):
 * neither the sparse buffers' group nor an explicit group, nor a large run put there by its
 * site. Heap lock held. */
static void live_4k_page(tp_hpage_t *h, void *arg) {
  tp_live_4k_t *a = arg;
  if (h->source != TP_SRC_4K) return;
  size_t bytes = 0;
  if (h->state == TP_HP_ACTIVE) {
    for (unsigned i = 0; i < TP_SLOTS; i++) {
      tp_slab_t *s = h->slot_slab[i];
      if (s == NULL || s->first_slot != i || s->hp != h) continue;
      for (unsigned o = 0; o < s->nobj; o++) {
        uint8_t v = __atomic_load_n(&s->live[o], __ATOMIC_RELAXED);
        if (s->kind == TP_SLAB_ARENA && (v & TP_ARENA_FREED)) v = 0;
        if (s->kind == TP_SLAB_SMALL && v && _tp_block_cached(s->base + (uintptr_t)o * s->size)) v = 0;
        if (s->kind == TP_SLAB_ARENA) bytes += (size_t)v * TP_GRANULE;
        else if (v) bytes += s->kind == TP_SLAB_MEDIUM ? _tp_run_usable(s) : s->size;
      }
    }
  } else if (h->state == TP_HP_LARGE) {
    tp_slab_t *s = h->slot_slab[0];
    if (s && __atomic_load_n(&s->live[0], __ATOMIC_RELAXED)) bytes = _tp_run_usable(s);
  } else {
    return;
  }
  if (bytes == 0) return;
  a->hpages++;
  a->bytes += bytes;
  const tp_group_t *g = h->state == TP_HP_ACTIVE ? _tp_groups[h->owner] : NULL;
  if (g && !g->on_4k && !g->explicit_) a->young++;
}

void _tp_stats_live_4k(tp_live_4k_t *out) {
  memset(out, 0, sizeof *out);
  if (atomic_load(&_tp_ready) == 0) return;
  _tp_lock(&_tp_heap_lock);
  _tp_heap_foreach(live_4k_page, out);
  _tp_unlock(&_tp_heap_lock);
}

/* verbose stats: each group's active hpages by source, and the slots used on those on 4 KiB
 * pages (heap lock held). */
typedef struct {
  unsigned n[TP_MAX_GROUPS][TP_SRC_COUNT];
  unsigned used4k[TP_MAX_GROUPS];
} page_count_t;
static void count_page(tp_hpage_t *h, void *arg) {
  page_count_t *pc = arg;
  if (h->state != TP_HP_ACTIVE || h->owner >= TP_MAX_GROUPS || h->source >= TP_SRC_COUNT) return;
  pc->n[h->owner][h->source]++;
  if (h->source == TP_SRC_4K) pc->used4k[h->owner] += h->nused;
}

/* Every stats field, once: the text report and the JSON object print this one table. */
typedef struct {
  const char *name;
  char kind; /* 'u' size_t, 'l' long, 'i' int, 'd' double, 's' string, 'm' size_t or none (SIZE_MAX) */
  union { size_t u; long l; int i; double d; const char *s; } v;
} tp_field_t;

void tp_stats_print(FILE *out, int json) {
  tp_stats_t st; /* tp_stats_get runs discovery: the mount and the NUMA nodes are reported */
  tp_stats_get(&st);
  size_t nm, nf, ba;
  ptrdiff_t lb;
  _tp_tcache_sum(&nm, &nf, &ba, &lb);
  tp_heap_counters_t c = _tp_heap_ctr;
  static const char *group_names[] = {"site", "thread", "none"};
  const char *mount = _tp_os.mount[0] ? _tp_os.mount : "";
  tp_meta_pages_t mp;
  _tp_meta_pages(&mp);
  unsigned nsites, split, class_keys;
  _tp_site_counts(&nsites, &split, &class_keys);
  tp_live_4k_t l4;
  _tp_stats_live_4k(&l4);
#define U(k, x) {k, 'u', {.u = (x)}}
  const tp_field_t f[] = {
      U("allocated_total", st.allocated_total), U("nmalloc", nm), U("nfree", nf), U("live_bytes", st.live_bytes),
      U("peak_live_bytes", st.peak_live_bytes), U("live_objects", st.live_objects),
      U("mapped_bytes", st.mapped_bytes), U("pages_hugetlbfs", st.pages_hugetlbfs), U("pages_thp", st.pages_thp),
      U("pages_4k", st.pages_4k), U("pages_1g", c.pages_by_source[TP_SRC_1G]), U("gpages", _tp_os.gpages_taken),
      U("fallbacks", st.fallbacks), U("pages_returned", st.pages_returned), {"density", 'd', {.d = st.density}},
      U("fork_unshared", c.fork_unshared), U("pages_promoted", c.promoted), U("large_runs_4k", c.large_4k),
      U("hpages_4k_live", l4.hpages), U("live_4k_bytes", l4.bytes), U("hpages_4k_start", l4.young), U("pool_pages_peak", _tp_os.pool_peak),
      U("pool_capped", _tp_os.pool_capped), {"pool_max", 'm', {.u = _tp_opt.pool_max}},
      U("hugetlb_windows", _tp_os.hugetlb_windows), U("hugetlb_files", _tp_os.hugetlb_files),
      U("hugetlb_single", _tp_os.hugetlb_single), U("forks_unshared", c.forks_unshared),
      U("fork_unshare_failed", c.fork_unshare_failed), U("fork_copy_helpers", c.fork_copy_helpers),
      U("forks_guarded", c.forks_guarded),
      U("fork_stop_timeouts", c.fork_stop_timeouts), U("fork_recollapsed", c.fork_recollapsed),
      U("fork_recollapse_failed", c.fork_recollapse_failed), U("fork_collapse_threads", c.fork_collapse_threads),
      {"mappings", 'l', {.l = count_mappings()}}, U("reserved_bytes", c.reserved_bytes),
      U("meta_bytes", _tp_meta_bytes()), U("meta_reserved_bytes", mp.reserved_bytes),
      U("meta_resident", mp.resident_bytes), U("meta_thp_bytes", mp.thp_bytes), U("meta_4k_bytes", mp.small_bytes),
      U("meta_tlb_entries", mp.tlb_entries), U("meta_mappings", mp.mappings),
      {"sites", 'i', {.i = (int)nsites}}, {"sites_split", 'i', {.i = (int)split}},
      {"sites_told_apart", 'i', {.i = (int)(nsites - split + class_keys)}}, /* split sites count by class */
      {"numa_nodes", 'i', {.i = _tp_os.numa_nodes}}, {"numa_note", 's', {.s = _tp_os.numa_note}},
  };
#undef U
  if (json)
    fprintf(out, "{\"pid\":%d,\"pool\":\"%s\",\"group\":\"%s\",\"hugetlbfs_mount\":\"%s\"", (int)getpid(),
            pool_name(), group_names[_tp_opt.group % 3], mount);
  else
    fprintf(out, "tlbpack: stats pid=%d pool=%s group=%s hugetlbfs_mount=%s\n", (int)getpid(), pool_name(),
            group_names[_tp_opt.group % 3], mount[0] ? mount : "none");
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    const tp_field_t *e = &f[i];
    if (json) fprintf(out, ",\"%s\":", e->name);
    else if (e->kind == 's' && e->v.s[0] == 0) continue; /* text: an empty note is left out */
    else fprintf(out, "tlbpack:   %-18s ", e->name);
    switch (e->kind) {
    case 'u': fprintf(out, "%zu", e->v.u); break;
    case 'l': fprintf(out, "%ld", e->v.l); break;
    case 'i': fprintf(out, "%d", e->v.i); break;
    case 'd': fprintf(out, "%.4f", e->v.d); break;
    case 's': fprintf(out, json ? "\"%s\"" : "%s", e->v.s); break;
    case 'm':
      if (e->v.u == SIZE_MAX) fputs(json ? "null" : "none", out);
      else fprintf(out, "%zu", e->v.u);
      break;
    }
    if (!json) fputc('\n', out);
  }
  if (json) {
    fprintf(out, ",\"pages_by_node\":[");
    int nodes = _tp_os.numa_nodes > 0 ? (_tp_os.numa_nodes < 8 ? _tp_os.numa_nodes : 8) : 1;
    for (int i = 0; i < nodes; i++) fprintf(out, "%s%zu", i ? "," : "", c.pages_by_node[i]);
    fprintf(out, "]}\n");
    return;
  }
  if (!_tp_opt.verbose) return;
  /* verbose: where the memory sits, group by group */
  static page_count_t pc; /* some 10 KiB: not on the caller's stack */
  memset(&pc, 0, sizeof pc);
  _tp_lock(&_tp_heap_lock);
  _tp_heap_foreach(count_page, &pc);
  _tp_unlock(&_tp_heap_lock);
  for (unsigned i = 0; i < TP_MAX_GROUPS; i++) {
    tp_group_t *g = _tp_groups[i];
    if (g == NULL || (atomic_load(&g->slab_bytes) == 0 && g->filler.hpages == 0)) continue;
    _tp_lock(&_tp_heap_lock);
    size_t used = g->filler.used;
    _tp_unlock(&_tp_heap_lock);
    fprintf(out, "tlbpack:   group %-4u %-24s %s slab_kb %zu own_hpages %zu (slots used %zu of %zu)\n", i,
            g->name, g->exclusive ? "exclusive" : "shared   ", atomic_load(&g->slab_bytes) >> 10,
            g->filler.hpages, used, g->filler.hpages * TP_SLOTS);
    fprintf(out, "tlbpack:     pages: hugetlbfs %u thp %u 4k %u 1g %u; slots used on 4k %u\n", pc.n[i][TP_SRC_HUGETLB],
            pc.n[i][TP_SRC_THP], pc.n[i][TP_SRC_4K], pc.n[i][TP_SRC_1G], pc.used4k[i]);
    /* its small classes: slabs, objects, and how many sit available in the slabs (the rest
     * are live or in thread caches) */
    for (unsigned c = 0; c < TP_NCLASSES; c++) {
      size_t slabs = 0, avail = 0, partial = 0;
      unsigned used = atomic_load_explicit(&g->lanes_used, memory_order_relaxed);
      for (unsigned i = 0; i < TP_LANES; i++) {
        if (!(used & (1u << i))) continue; /* never filled: nothing there, and its pages stay untouched */
        tp_lane_t *l = &g->lanes[i][c];
        _tp_lock(&l->lock);
        slabs += l->slabs;
        for (tp_slab_t *s = l->partial; s; s = s->next, partial++) avail += s->navail;
        _tp_unlock(&l->lock);
      }
      if (slabs == 0) continue;
      fprintf(out, "tlbpack:     class %-6u slabs %-6zu (%zu partial) objects %-8zu available in slabs %zu\n",
              _tp_classes[c].size, slabs, partial, slabs * _tp_classes[c].nobj, avail);
    }
  }
}

/* ---- regions file -------------------------------------------------------------------- */
typedef struct {
  FILE *f;
  uintptr_t start, end;
  int src;
} regions_t;

static const char *src_size(int src) { return src == TP_SRC_4K ? "4k" : src == TP_SRC_1G ? "1g" : "2m"; }
static const char *src_name(int src) {
  switch (src) {
  case TP_SRC_HUGETLB:
  case TP_SRC_1G: return "hugetlbfs";
  case TP_SRC_THP: return "thp";
  default: return "4k";
  }
}

static void regions_flush(regions_t *r) {
  if (r->end > r->start)
    fprintf(r->f, "%#lx-%#lx %s %s\n", (unsigned long)r->start, (unsigned long)r->end, src_size(r->src),
            src_name(r->src));
  r->start = r->end = 0;
}

static void regions_page(tp_hpage_t *h, void *arg) {
  regions_t *r = arg;
  if (h->source == TP_SRC_NONE) {
    regions_flush(r);
    return;
  }
  int same_kind = r->end == h->addr && src_name(r->src) == src_name(h->source) && src_size(r->src) == src_size(h->source);
  if (!same_kind) {
    regions_flush(r);
    r->start = h->addr;
    r->src = h->source;
  }
  r->end = h->addr + TP_HPAGE;
}

int tp_regions_write(const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  fprintf(f, "# tlbpack regions v1 pid=%d\n", (int)getpid());
  regions_t r = {f, 0, 0, 0};
  if (atomic_load(&_tp_ready)) {
    _tp_lock(&_tp_heap_lock);
    _tp_heap_foreach(regions_page, &r);
    regions_flush(&r);
    _tp_unlock(&_tp_heap_lock);
  }
  int err = ferror(f);
  if (fclose(f) != 0 || err) return -1;
  return 0;
}

/* Programs close stderr in their own exit handlers (coreutils does), which run before this
 * report: with stats on, a private copy of stderr is kept from start-up, and used at exit only
 * if it still is the same file (a program may close every descriptor and reuse the number). */
static int report_fd = -1;
static dev_t report_dev;
static ino_t report_ino;

void _tp_stats_keep_stderr(void) {
  if (_tp_opt.stats == TP_STATS_OFF) return;
  struct stat st;
  int fd = fcntl(2, F_DUPFD_CLOEXEC, 100);
  if (fd < 0) return;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return;
  }
  report_fd = fd;
  report_dev = st.st_dev;
  report_ino = st.st_ino;
}

static int report_target(void) {
  struct stat st;
  if (report_fd >= 0 && fstat(report_fd, &st) == 0 && st.st_dev == report_dev && st.st_ino == report_ino)
    return report_fd;
  return 2;
}

void _tp_atexit_report(void) {
  if (atomic_load(&_tp_ready) == 0) return;
  if (_tp_opt.regions_path[0] && tp_regions_write(_tp_opt.regions_path) != 0)
    _tp_message("could not write regions file '%s': %s", _tp_opt.regions_path, strerror(errno));
  if (_tp_opt.stats == TP_STATS_OFF) return;
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (m == NULL) return;
  tp_stats_print(m, _tp_opt.stats == TP_STATS_JSON);
  fclose(m);
  int fd = report_target();
  for (size_t off = 0; off < len;) {
    ssize_t w = write(fd, buf + off, len - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  free(buf);
}
