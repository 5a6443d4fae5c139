/* The placement plan parser and resolver (alloc/plan.c): good plans, and every bad input a
 * person editing a plan can make gets a message naming the line and what was expected. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "plan.h"

static tp_plan_t plan;
static char err[320];

static int parse(const char *text) { return _tp_plan_parse(&plan, text, strlen(text), err, sizeof err); }

#define GOOD "tlbpack-plan 1\n# a comment\nprogram /usr/bin/prog\n\ngroup hot1 ordered\n" \
             "site /usr/bin/prog+0x1156   # node\nsite /usr/lib/libc.so.6+0x761FB\ngroup cold apart\n" \
             "site /usr/bin/prog+0x11c0\n"
#define MAPS "55d0c0000000-55d0c0001000 r--p 00000000 08:01 12 /usr/bin/prog\n" \
             "55d0c0001000-55d0c0002000 r-xp 00001000 08:01 12 /usr/bin/prog\n" \
             "7f0000000000-7f0000001000 r--p 00000000 08:01 13 /usr/lib/libc.so.6\n" \
             "7f0000001000-7f0000100000 r-xp 00001000 08:01 13 /usr/lib/libc.so.6\n" \
             "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n"

Test(plan, a_good_plan_parses_into_groups_sites_and_modules) {
  cr_assert_eq(parse(GOOD), 0, "%s", err);
  cr_assert_str_eq(plan.program, "/usr/bin/prog");
  cr_assert_eq(plan.ngroups, 2);
  cr_assert_eq(plan.groups[0].kind, TP_PLAN_ORDERED);
  cr_assert_eq(plan.groups[1].kind, TP_PLAN_APART);
  cr_assert_eq(plan.nsites, 3);
  cr_assert_eq(plan.nmodules, 2);
  cr_assert_eq(plan.sites[1].offset, 0x761fb);
  cr_assert_eq(plan.sites[2].group, 1);
}

Test(plan, a_site_behind_a_wrapper_is_named_by_size_beside_the_whole_site) {
  cr_assert_eq(parse("tlbpack-plan 1\nprogram /p\ngroup hot1 ordered\nsite /p+0x10 size 48  # node\n"
                     "site /p+0x10 size 1024\ngroup cold apart\nsite /p+0x10 size 2048\nsite /p+0x20\n"), 0, "%s", err);
  cr_assert_eq(plan.nsites, 4);
  cr_assert_eq(plan.sites[0].size, 48);
  cr_assert_eq(plan.sites[1].size, 1024);
  cr_assert_eq(plan.sites[2].group, 1);
  cr_assert_eq(plan.sites[3].size, 0, "without 'size', the whole site");
}

Test(plan, sites_resolve_against_each_modules_lowest_mapping_at_offset_0) {
  cr_assert_eq(parse(GOOD), 0, "%s", err);
  cr_assert_eq(_tp_plan_resolve(&plan, MAPS, strlen(MAPS), "/usr/bin/prog", err, sizeof err), 0, "%s", err);
  cr_assert_eq(plan.sites[0].addr, 0x55d0c0000000 + 0x1156);
  cr_assert_eq(plan.sites[1].addr, 0x7f0000000000 + 0x761fb);
}

Test(plan, a_plan_for_another_program_is_refused) {
  cr_assert_eq(parse(GOOD), 0, "%s", err);
  cr_assert_eq(_tp_plan_resolve(&plan, MAPS, strlen(MAPS), "/usr/bin/other", err, sizeof err), -1);
  cr_assert(strstr(err, "/usr/bin/prog") && strstr(err, "/usr/bin/other"), "%s", err);
}

Test(plan, a_plan_whose_modules_are_not_loaded_is_refused) {
  cr_assert_eq(parse("tlbpack-plan 1\nprogram /usr/bin/prog\ngroup g ordered\nsite /opt/lib.so+0x10\n"), 0, "%s", err);
  cr_assert_eq(_tp_plan_resolve(&plan, MAPS, strlen(MAPS), "/usr/bin/prog", err, sizeof err), -1);
  cr_assert(strstr(err, "modules"), "%s", err);
}

struct bad { char text[96], says[64]; }; /* arrays: the test runs in another process */
static struct bad bads[] = {
    {"", "empty"},
    {"program /a\n", "line 1: expected the header"},
    {"tlbpack-plan 2\n", "line 1: expected the header"},
    {"tlbpack-plan 1\n", "no 'program'"},
    {"tlbpack-plan 1\nprogram relative\n", "line 2: expected 'program /ABSOLUTE/PATH'"},
    {"tlbpack-plan 1\nprogram /a\nprogram /a\n", "line 3: expected 'program"},
    {"tlbpack-plan 1\nprogram /a\nsite /a+0x1\n", "line 3: a site before any 'group'"},
    {"tlbpack-plan 1\nprogram /a\ngroup g sideways\n", "line 3: expected 'group NAME ordered|apart'"},
    {"tlbpack-plan 1\nprogram /a\ngroup g ordered\nsite /a+12\n", "line 4: expected 'site"},
    {"tlbpack-plan 1\nprogram /a\ngroup g ordered\nsite /a+0xZZ\n", "line 4: expected 'site"},
    {"tlbpack-plan 1\nprogram /a\ngroup g ordered\nsite a+0x1\n", "line 4: expected 'site"},
    {"tlbpack-plan 1\nprogram /a\ngroup g ordered\nsite /a+0x11111111111111111\n", "line 4: expected 'site"},
    {"tlbpack-plan 1\nprogram /a\ngroup g ordered\nsite /a+0x1\nsite /a+0x1\n", "line 5: this site is already"},
    {"tlbpack-plan 1\nprogram /a\ngroup g ordered extra\n", "line 3: too many words"},
    {"tlbpack-plan 1\nprogram /a\nplace /a+0x1\n", "line 3: expected 'program', 'group' or 'site'"},
    {"tlbpack-plan 1\nprogram /a\ngroup g ordered\nsite /a+0x1 size\n", "line 4: expected 'site /MODULE/PATH+0xOFFSET size N'"},
    {"tlbpack-plan 1\nprogram /a\ngroup g ordered\nsite /a+0x1 size 0\n", "line 4: expected 'site /MODULE/PATH+0xOFFSET size N'"},
    {"tlbpack-plan 1\nprogram /a\ngroup g ordered\nsite /a+0x1 size 262145\n", "line 4: expected 'site /MODULE/PATH+0xOFFSET size N'"},
    {"tlbpack-plan 1\nprogram /a\ngroup g ordered\nsite /a+0x1 size 4x\n", "line 4: expected 'site /MODULE/PATH+0xOFFSET size N'"},
    {"tlbpack-plan 1\nprogram /a\ngroup g ordered\nsite /a+0x1 bytes 48\n", "line 4: expected 'site /MODULE/PATH+0xOFFSET size N'"},
    {"tlbpack-plan 1\nprogram /a\ngroup g ordered\nsite /a+0x1 size 48 more\n", "line 4: too many words"},
    {"tlbpack-plan 1\nprogram /a\ngroup g ordered x y\n", "line 3: too many words"},
    {"tlbpack-plan 1\nprogram /a\ngroup g ordered\nsite /a+0x1 size 48\nsite /a+0x1 size 48\n", "line 5: this site is already"},
};

ParameterizedTestParameters(plan, bad_input_is_refused_with_the_line_and_what_was_expected) {
  return cr_make_param_array(struct bad, bads, sizeof bads / sizeof bads[0]);
}
ParameterizedTest(struct bad *b, plan, bad_input_is_refused_with_the_line_and_what_was_expected) {
  cr_assert_eq(parse(b->text), -1, "accepted: %s", b->text);
  cr_assert(strstr(err, b->says) != NULL, "for %s: said '%s', expected '%s'", b->text, err, b->says);
}

Test(plan, more_than_512_sites_are_refused) {
  static char text[64 << 10];
  size_t o = (size_t)snprintf(text, sizeof text, "tlbpack-plan 1\nprogram /a\ngroup g ordered\n");
  for (int i = 0; i < 513; i++) o += (size_t)snprintf(text + o, sizeof text - o, "site /a+0x%x\n", i + 1);
  cr_assert_eq(parse(text), -1);
  cr_assert(strstr(err, "more than 512 sites"), "%s", err);
}
