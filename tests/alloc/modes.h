/* Tests of one group or pool mode's behaviour (site placement, start small, ...) in a process
 * that TLBPACK_CONF from the environment runs in another mode: they skip, saying which mode
 * they test, instead of failing on a question that mode does not ask. Every other test runs
 * and must pass in every mode: tests/alloc/modes.sh runs each unit test binary under each
 * group and pool mode (ctest alloc.unit_tests_pass_in_every_group_and_pool_mode). The options
 * are parsed by the library's constructor, before any test starts. */
#ifndef TP_TEST_MODES_H
#define TP_TEST_MODES_H

#include <criterion/criterion.h>
#include <stdlib.h>

#include "internal.h"

#define TP_NEEDS(cond, what)                                                                     \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      const char *conf_ = getenv("TLBPACK_CONF");                                               \
      cr_skip_test("tests %s; TLBPACK_CONF=%s runs another mode", what, conf_ ? conf_ : "");   \
    }                                                                                            \
  } while (0)

/* Groups by call site, tlbpack's default. */
#define TP_NEEDS_SITE_GROUPS() TP_NEEDS(_tp_opt.group == TP_GROUP_SITE, "group:site placement")
/* Groups kept apart (site or explicit ones): not group:none, where every block shares group 0. */
#define TP_NEEDS_GROUPS_APART() TP_NEEDS(_tp_opt.group != TP_GROUP_NONE, "groups kept apart (not group:none)")
/* One thread's blocks in more than its own group: not group:thread, where a thread allocates
 * from its thread group and caches only that group's blocks. */
#define TP_NEEDS_NO_THREAD_GROUPS() TP_NEEDS(_tp_opt.group != TP_GROUP_THREAD, "groups other than thread groups (not group:thread)")
/* pool:auto, the only mode that starts small on 4 KiB pages. */
#define TP_NEEDS_POOL_AUTO() TP_NEEDS(_tp_opt.pool == TP_POOL_AUTO, "pool:auto (start small on 4 KiB pages)")
/* A small heap on 4 KiB pages: pool:auto (starting small) or pool:4k, not the pools that take
 * huge pages from the first byte. */
#define TP_NEEDS_SMALL_HEAP_ON_4K()                                                             \
  TP_NEEDS(_tp_opt.pool == TP_POOL_AUTO || _tp_opt.pool == TP_POOL_4K,                          \
           "a small heap on 4 KiB pages (not pool:thp or pool:hugetlbfs)")

#endif
