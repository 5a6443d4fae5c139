/* tlbsim — a TLB / page-walk simulator (libtlbsim.a, CLI build/tlbsim).
 *
 * Model: per-core L1 ITLB and L1 DTLB (arrays per page size as the preset says), an optional
 * L2 TLB (unified or data-only) and optional L2 ITLB, a radix page-table walker (4 or 5
 * levels, 9 index bits each) with page-walk caches per upper level, optional nested (2-D)
 * walks, address-space switches with flush or limited-ASID tagging, and software prefetch.
 *
 * Typical use:
 *     ts_config_t cfg;
 *     ts_config_preset(&cfg, "skylake");
 *     ts_config_set(&cfg, "l2.entries=0", err, sizeof err);    // optional overrides
 *     ts_sim_t *s = ts_sim_new(&cfg, err, sizeof err);
 *     ts_access(s, addr, 8, 'R');  ...
 *     ts_print_json(stdout, s, NULL);
 *     ts_sim_free(s);
 *
 * Errors. Nothing in the library prints, exits or aborts. A function that can fail on user
 * input returns -1 (or NULL) and writes one line into err naming the input and what would be
 * accepted. Running out of memory is an error too: ts_sim_new() returns NULL ("out of
 * memory ..."); during a run (the footprint grows with the distinct pages touched) the
 * simulator becomes *failed*: ts_access() and ts_context_switch() return -1, ts_run_fd()
 * returns -1 with the reason in err, ts_sim_error() says why, and every later access is
 * refused and not counted. The counters of a failed simulator cover the accesses before the
 * failure; ts_sim_stats() and the printers still work, and ts_sim_free() frees everything.
 * Each declaration below says what it returns on failure.
 */
#ifndef TLBSIM_H
#define TLBSIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Page sizes, as codes. */
enum { TS_PS_4K = 0, TS_PS_2M = 1, TS_PS_1G = 2, TS_NSIZES = 3 };
/* Replacement policies. */
enum { TS_POL_LRU = 0, TS_POL_PLRU = 1, TS_POL_RANDOM = 2, TS_NPOLICIES = 3 };
/* TLBs of a core. */
enum { TS_L1I = 0, TS_L1D = 1, TS_L2 = 2, TS_L2I = 3, TS_NTLBS = 4 };
/* Address-space switch handling. */
enum { TS_ASID_FLUSH = 0, TS_ASID_TAGGED = 1 };
/* Trace formats. */
typedef enum { TS_FMT_AUTO = 0, TS_FMT_TEXT, TS_FMT_LACKEY, TS_FMT_BIN } ts_format_t;

#define TS_MAX_LEVELS 5
#define TS_MAX_ASIDS 4096           /* hardware ASID slots (tag bits in an entry) */
#define TS_MAX_ENTRIES (1u << 22)   /* per array: keeps a fuzzed --set from allocating gigabytes */

/* One set-associative array of a TLB. ways == 0 means fully associative. */
typedef struct ts_array_cfg_s {
  uint32_t entries;   /* 0: no array */
  uint32_t ways;
} ts_array_cfg_t;

/* One TLB: a main array holding the page sizes in `sizes` (bit per TS_PS_*), and separate
 * arrays for 2M and 1G pages when the main array does not hold them. */
typedef struct ts_tlb_cfg_s {
  ts_array_cfg_t main;
  ts_array_cfg_t huge[TS_NSIZES];  /* [TS_PS_2M], [TS_PS_1G]; [TS_PS_4K] unused */
  uint8_t sizes;                   /* page sizes held by the main array */
  uint8_t policy;                  /* TS_POL_* */
} ts_tlb_cfg_t;

/* The whole geometry and model in one struct; fill it with ts_config_preset(). */
typedef struct ts_config_s {
  char cpu[16];
  ts_tlb_cfg_t tlb[TS_NTLBS];
  int l2_instr;                    /* 1: the L2 TLB also serves L1 ITLB misses (unified STLB) */
  int l1d_stores;                  /* 0: stores skip the L1 DTLB and look up the L2 (core2 DTLB0) */
  uint32_t pwc[TS_MAX_LEVELS + 1]; /* page-walk cache entries caching level-k entries, k=2..5 */
  uint32_t hpwc[TS_MAX_LEVELS + 1];/* the host's walk caches for nested walks */
  int levels;                      /* 4 or 5 */
  int host_levels;                 /* for nested walks */
  int nested;                      /* 0: native; else 1 + host page size code */
  int page_size;                   /* TS_PS_* for addresses outside any region */
  int asid_mode;                   /* TS_ASID_* */
  uint32_t asid_count;             /* hardware ASID slots in TS_ASID_TAGGED mode */
  uint64_t seed;                   /* random replacement */
  /* Latencies in cycles, for est_walk_cycles only (an estimate, not a timing model). */
  uint32_t lat_l2;                 /* each L1 miss that looks up the L2 TLB */
  uint32_t lat_walk;               /* fixed cost of starting a walk */
  uint32_t lat_ref;                /* each page-table memory reference */
  /* Which keys ts_config_set() was given (bookkeeping; ts_config_preset() clears it), so that
   * ts_config_check() can refuse a setting this configuration would ignore. */
  uint64_t given;
} ts_config_t;

/* Counters. Demand accesses and software prefetches are counted apart. */
typedef struct ts_stats_s {
  uint64_t accesses, reads, writes, ifetches, prefetches, straddles, context_switches;
  uint64_t l1_hits, l1_misses, l1i_misses, l1d_misses;   /* per page touched (straddles: 2) */
  uint64_t l1_bypasses;            /* stores sent straight to the L2 TLB (l1d.stores=0) */
  uint64_t l2_hits, l2_misses;
  uint64_t walks, walk_levels, walk_mem_refs, pwc_hits;
  uint64_t prefetch_hits, prefetch_walks, prefetch_walk_refs;
  uint64_t tlb_flushes, asid_evictions;
  uint64_t distinct_pages[TS_NSIZES];
  uint64_t pt_pages[TS_MAX_LEVELS + 1];      /* directories at level k (1 = page tables) */
  uint64_t mapped_pt_pages[TS_MAX_LEVELS + 1]; /* same, to map every range of --regions/--smaps */
  uint64_t est_walk_cycles;
  /* Demand accesses before the measured region (ts_sim_set_warmup, ts_sim_measure_start): they
   * warmed the TLBs and walk caches and are in no other counter, except that distinct_pages
   * and the page-table counts cover the whole trace (the address space they describe exists
   * whether or not it was measured). 0 without a warm-up. */
  uint64_t warmup_accesses;
} ts_stats_t;

typedef struct ts_sim_s ts_sim_t;

/* ---- configuration ------------------------------------------------------------------- */
/* Fills cfg with a preset: core2, skylake, goldencove, zen2, zen3, zen4, custom.
 * Returns 0, or -1 for an unknown name (cfg untouched). */
int ts_config_preset(ts_config_t *cfg, const char *name);
/* Applies one "key=value" (the --set syntax; see ts_config_keys()). Returns 0, or -1 with
 * "--set KEY: expected ..." in err for an unknown key or a bad value (cfg unchanged). */
int ts_config_set(ts_config_t *cfg, const char *assignment, char *err, size_t errlen);
/* Checks the geometry (ways divide entries, tree-PLRU needs power-of-two ways, ...) and that
 * every key given to ts_config_set() has an effect in the final configuration (l2.ways with
 * l2.entries 0, asid.count in flush mode, ... are refused). Returns 0, or -1 with the reason
 * in err. ts_sim_new() calls it. */
int ts_config_check(const ts_config_t *cfg, char *err, size_t errlen);
/* A help text listing every --set key. */
const char *ts_config_keys(void);
const char *const *ts_presets(void);   /* NULL-terminated */
/* "4k"/"2m"/"1g" -> TS_PS_*, or -1. */
int ts_page_size_parse(const char *s);
const char *ts_page_size_name(int ps);

/* ---- the simulator ------------------------------------------------------------------- */
/* Returns the simulator, or NULL with the reason in err: a configuration ts_config_check()
 * refuses, or "out of memory ...". */
ts_sim_t *ts_sim_new(const ts_config_t *cfg, char *err, size_t errlen);
void ts_sim_free(ts_sim_t *s);   /* NULL is a no-op */
/* Page sizes per range. Regions (tlbpack's format) take precedence over smaps; both must be
 * loaded before the first access. Return 0, or -1 with the reason in err (errors in a file
 * name FILE:LINE; a range after the first access, misaligned, overlapping or beyond the
 * address space; out of memory). */
int ts_sim_load_regions(ts_sim_t *s, const char *path, char *err, size_t errlen);
int ts_sim_load_smaps(ts_sim_t *s, const char *path, char *err, size_t errlen);
int ts_sim_add_range(ts_sim_t *s, uint64_t start, uint64_t end, int page_size, int from_smaps,
                     char *err, size_t errlen);

/* One access: op is 'R', 'W', 'I' (instruction fetch) or 'P' (software prefetch); any other op
 * is ignored. size 0 counts as 1. An access that crosses page boundaries touches every page it
 * covers. Returns 0, or -1 when the simulator has failed (out of memory, at this access or
 * before; ts_sim_error() says why). */
int ts_access(ts_sim_t *s, uint64_t addr, uint32_t size, char op);
/* Switch to address space asid (the trace's "C <asid>"). Returns 0, or -1 past 32768 address
 * spaces (the simulator stays usable) or when the simulator has failed (ts_sim_error()). */
int ts_context_switch(ts_sim_t *s, uint64_t asid);
/* A measured region. The first n demand accesses (reads, writes, instruction fetches; not
 * prefetches or context switches) only warm the TLBs and walk caches up; at the n-th, every
 * counter restarts from 0 (see warmup_accesses). n = TS_WARMUP_MARKER: the warm-up lasts until
 * the trace's first B record (ts_run_fd), or until ts_sim_measure_start(). n = 0: none (the
 * default; B records are then ignored). Returns 0, or -1 after the first access. */
#define TS_WARMUP_MARKER UINT64_MAX
int ts_sim_set_warmup(ts_sim_t *s, uint64_t n, char *err, size_t errlen);
/* Starts the measured region now: the counters so far become warmup_accesses, the TLBs and
 * walk caches keep what they hold. Ends any warm-up set with ts_sim_set_warmup(). */
void ts_sim_measure_start(ts_sim_t *s);
/* 1 while a warm-up set with ts_sim_set_warmup() has not ended (too few accesses so far, or no
 * B record yet): the counters then hold nothing measured. Else 0. */
int ts_sim_warming(const ts_sim_t *s);
/* Why the simulator failed ("out of memory for ... after N accesses"), or NULL while it has not. */
const char *ts_sim_error(const ts_sim_t *s);
/* Counters so far (est_walk_cycles and page-table counts are brought up to date). Never NULL;
 * after a failure, the counts of the accesses before it. */
const ts_stats_t *ts_sim_stats(ts_sim_t *s);
const ts_config_t *ts_sim_config(const ts_sim_t *s);

/* ---- traces -------------------------------------------------------------------------- */
/* Streams a trace from fd through s in constant memory. fmt TS_FMT_AUTO detects it.
 * Returns 0, or -1 with "line N: what was expected" (or "record N: ...") in err, or with a read
 * error, or with ts_sim_error()'s reason when the simulator ran out of memory. */
int ts_run_fd(ts_sim_t *s, int fd, ts_format_t fmt, ts_format_t *detected, char *err, size_t errlen);
int ts_format_parse(const char *s);   /* "auto|text|lackey|bin" -> ts_format_t, or -1 */
const char *ts_format_name(ts_format_t f);

/* Binary trace writer (the format in tlbsim(1), TRACE FORMATS): a 16-byte header, then 16-byte records
 * (op 'B', address and size 0: the measured region begins here; see ts_sim_set_warmup). */
#define TS_BIN_MAGIC "TLBPTRC"
typedef struct ts_bin_record_s {
  uint64_t addr;
  uint32_t size;
  uint8_t op;
  uint8_t pad[3];
} ts_bin_record_t;
int ts_bin_write_header(FILE *f);                                   /* 0, or -1: fwrite failed */
int ts_bin_write(FILE *f, uint64_t addr, uint32_t size, char op);   /* 0, or -1: fwrite failed */

/* ---- reports ------------------------------------------------------------------------- */
/* label names the trace (may be NULL). The printers return nothing: a write error is left
 * in out's error indicator (ferror). */
void ts_print_text(FILE *out, ts_sim_t *s, const char *label);
void ts_print_json(FILE *out, ts_sim_t *s, const char *label);
/* Two runs side by side with ratios b/a. */
void ts_print_compare_text(FILE *out, ts_sim_t *a, const char *la, ts_sim_t *b, const char *lb);
void ts_print_compare_json(FILE *out, ts_sim_t *a, const char *la, ts_sim_t *b, const char *lb);

#ifdef __cplusplus
}
#endif
#endif
