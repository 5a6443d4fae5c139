/* Placement plans (plan.c): which allocation sites share one group, read from the text file
 * `tlbpack profile` writes (format in tlbpack(1), PLAN FILE). Parsing and resolving are
 * pure functions over text, into fixed-size static storage: the allocator loads a plan during
 * its first malloc, when nothing may allocate. Tests and the fuzz target call them directly. */
#ifndef TP_PLAN_H
#define TP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#define TP_PLAN_MAX_SITES 512
#define TP_PLAN_MAX_GROUPS 64
#define TP_PLAN_MAX_MODULES 16
#define TP_PLAN_PATH 256

enum { TP_PLAN_ORDERED = 1, TP_PLAN_APART = 2 };

typedef struct tp_plan_site_s {
  uint64_t offset;   /* from the module's load address */
  uintptr_t addr;    /* resolved return address (0 until _tp_plan_resolve) */
  uint16_t module;
  uint16_t group;    /* index into groups */
  uint32_t size;     /* `size N`: only the requests in N's size class (a site behind a wrapper);
                        0: the whole site */
} tp_plan_site_t;

typedef struct tp_plan_s {
  char program[TP_PLAN_PATH];
  char modules[TP_PLAN_MAX_MODULES][TP_PLAN_PATH];
  uintptr_t base[TP_PLAN_MAX_MODULES];
  unsigned nmodules;
  struct { char name[32]; uint8_t kind; } groups[TP_PLAN_MAX_GROUPS];
  unsigned ngroups;
  tp_plan_site_t sites[TP_PLAN_MAX_SITES];
  unsigned nsites;
} tp_plan_t;

/* Parses a plan's text (n bytes, need not be NUL-terminated). Returns 0, or -1 with
 * "line N: what was expected" in err; *plan is then unusable. */
int _tp_plan_parse(tp_plan_t *plan, const char *text, size_t n, char *err, size_t errlen);
/* Resolves every site against a /proc/self/maps text: a module's load address is the lowest
 * start of its mappings at file offset 0. exe is the running program's path: a plan whose
 * `program` differs is refused. Returns 0, or -1 with the reason in err. */
int _tp_plan_resolve(tp_plan_t *plan, const char *maps, size_t n, const char *exe, char *err, size_t errlen);

#define TP_PLAN_MAX_SIZE (256u << 10) /* `size N`: N up to the largest slab class */

#endif
