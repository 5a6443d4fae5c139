/* The groups layer: creating groups, the site table and site keys (group.c), placement plans
 * (plan.c). The group records themselves are in types.h, read by every layer. Below it: the
 * runs (a group's slabs go back through them). */
#ifndef TP_GROUP_H
#define TP_GROUP_H

#include "runs.h"

/* ---- groups (group.c) ---------------------------------------------------------------- */
void _tp_groups_init(void) TP_INTERNAL;
/* The group of allocation site `site`; *young is set while the site allocates from the shared
 * group because it has not yet shown that it keeps memory. */
unsigned _tp_site_group(uintptr_t site, int *young) TP_INTERNAL;
/* The group whose hpages stay on 4 KiB pages (made on first use; TP_SHARED_GROUP if none can be). */
unsigned _tp_group_4k(void) TP_INTERNAL;
/* A young site is about to refill a cache of the shared group with `bytes`: counts its demand,
 * and returns the group it allocates from now (its own, once it has earned one). */
unsigned _tp_site_refill(uintptr_t site, size_t bytes) TP_INTERNAL;
/* The group a malloc of `size` (class c; TP_NCLASSES past the slab classes) at site ra
 * allocates from, in thread tc, on the generic path; *route (NULL: an aligned block, never
 * routed) where a block of a few slots goes (TP_ROUTE_*). *key is the site's key (ra, or site +
 * class behind a wrapper); *base TP_MIXED_NO_BASE, or the site's own group when a refill of
 * class c borrows another group's slabs (tcache.h, _tp_tcache_point_site), or
 * TP_GROUP_KEEP_SLOT when the site cache's slot is to stay as it is. */
#define TP_MIXED_NO_BASE (~0u)
#define TP_GROUP_KEEP_SLOT (~1u)
unsigned _tp_group_for(tp_tcache_t *tc, uintptr_t ra, size_t size, unsigned c, int *route, uintptr_t *key,
                       unsigned *base) TP_INTERNAL;
unsigned _tp_thread_group(void) TP_INTERNAL;
/* Placement plans (plan.c): loads plan:FILE at start-up (one warning and no plan on any
 * error), and gives the group a planned site belongs to (TP_SHARED_GROUP: not planned). */
void _tp_plan_load(const char *path) TP_INTERNAL;
unsigned _tp_plan_group(uintptr_t key) TP_INTERNAL;
/* Whether the plan names site ra by size (`site ... size N`): ra is then split by class. */
int _tp_plan_splits(uintptr_t ra) TP_INTERNAL;
/* The key group:site places a small allocation of class c at site ra under: ra, or ra + c when
 * ra is a wrapper (sitekey.h) or the plan names it by size. Counts ra's classes (slow path). */
uintptr_t _tp_site_key(uintptr_t ra, unsigned c) TP_INTERNAL;
/* Whether site ra is split into site + class keys. */
int _tp_site_is_split(uintptr_t ra) TP_INTERNAL;
/* Stats: distinct return addresses seen, how many of them are split by class, and the
 * site + class keys they were split into. */
void _tp_site_counts(unsigned *sites, unsigned *split, unsigned *class_keys) TP_INTERNAL;
/* An exited thread's group goes to the next new thread (its pages and slabs are reused). */
void _tp_thread_group_release(unsigned id) TP_INTERNAL;
void _tp_groups_prefork(void) TP_INTERNAL;
void _tp_groups_postfork(int child) TP_INTERNAL;
/* An explicit group (tp_group_create; `ordered`: an arena), owning its hpages; NULL when
 * the group table is full. */
tp_group_t *_tp_group_create(const char *name, int ordered) TP_INTERNAL;
/* The end of tp_group_destroy, its blocks counted: thread caches drop what they hold of it,
 * its slabs go back and its id is given to the next group. */
void _tp_group_retire(tp_group_t *g) TP_INTERNAL;

#endif
