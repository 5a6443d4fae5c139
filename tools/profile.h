/* tlbpack profile internals, shared by its files (names tpp_, this command only):
 *   profile.c         the command: options, running PROGRAM under valgrind lackey, the steps
 *   profile_map.c     hash maps, allocation
 *   profile_attr.c    the log and the trace read in step; accesses attributed to sites
 *   profile_name.c    sites named module + offset, symbolized
 *   profile_plan.c    hot / cold classification and the plan file
 *   profile_report.c  the text and JSON report */
#ifndef TPP_PROFILE_H
#define TPP_PROFILE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tlbsim.h"

typedef struct {
  uint64_t *k;
  uint32_t *v;
  size_t cap, n;
} map_t;
#define EMPTY UINT64_MAX
void *tpp_xcalloc(size_t n, size_t s);
void *tpp_xrealloc(void *p, size_t n);
void tpp_map_init(map_t *m, size_t cap);
/* The value slot of key; NULL when absent and !insert. Inserted values start at 0. */
uint32_t *tpp_map_slot(map_t *m, uint64_t key, int insert);
void tpp_map_del(map_t *m, uint64_t key);

typedef struct {
  uint64_t ra;             /* a return address, or a site + class key (sitekey.h) */
  uint64_t classes;        /* whole sites: the classes seen, to split wrappers as the allocator does */
  int split;
  uint64_t objects, bytes, accesses, visits, l1, l2, refs, pages4k, pages2m, freed;
  uint64_t life_sum;       /* accesses of the trace between birth and death (or the end) */
  uint64_t live_bytes;
  char name[PATH_MAX + 32], sym[512];
} site_t;

typedef struct {
  uint64_t start, end, birth;
  uint32_t site;
  uint32_t alive;
} obj_t;

#define RING 8 /* pairs are counted within this many site switches */

typedef struct {
  ts_sim_t *sim;
  const ts_stats_t *st;
  FILE *log;
  uint64_t marker;
  uint64_t events, lines;
} run_t;

extern site_t *tpp_sites;
extern size_t tpp_nsites;
extern map_t tpp_site_of_ra, tpp_obj_of_start, tpp_page_head, tpp_pages_seen, tpp_pairs;
extern obj_t *tpp_objs;
extern size_t tpp_nobjs;
extern uint64_t tpp_now; /* data accesses so far */
extern uint64_t tpp_total_data, tpp_unattributed, tpp_una_l1, tpp_una_l2, tpp_una_refs;
/* One line of a lackey or text trace; -1 when the trace has more markers than the log. */
int tpp_trace_line(run_t *r, const char *line);

typedef struct { uint64_t start, end, off; char path[PATH_MAX]; } mapping_t;
extern mapping_t *tpp_maps;
extern size_t tpp_nmaps;
void tpp_load_maps(const char *path);
void tpp_name_sites(void);
void tpp_symbolize(site_t *s);

enum { K_REST = 0, K_HOT = 1, K_COLD = 2 };
extern size_t *tpp_order; /* site indices by L1 misses, most first */
extern uint8_t *tpp_kind;  /* K_* per site */
int tpp_by_misses(const void *a, const void *b);
void tpp_classify(uint64_t total_l1, uint64_t total_acc);
int tpp_write_plan(const char *path, const char *program, unsigned *nhot, unsigned *ncold);

void tpp_report(FILE *o, int json, unsigned top, const ts_stats_t *st, const char *plan, unsigned nhot, unsigned ncold);

#endif
