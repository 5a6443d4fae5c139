/* Regions and smaps parsing: page sizes per range, and errors naming FILE:LINE. */
#include "helpers.h"

static int load(ts_sim_t *s, bool smaps, const char *text, char *err, size_t errlen) {
  const char *p = tmpfile_with(text, strlen(text));
  int rc = smaps ? ts_sim_load_smaps(s, p, err, errlen) : ts_sim_load_regions(s, p, err, errlen);
  unlink(p);
  return rc;
}

Test(maps, regions_file_sets_the_page_size_per_range) {
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  const char *reg = "# tlbpack regions v1\n"
                    "0x7f2a00000000-0x7f2a00600000 2m hugetlbfs\n"
                    "7f2a00600000-7f2a00800000 2m   # THP, no source word\n"
                    "0x7f2a00800000-0x7f2a00a00000 4k 4k\n"
                    "0x7f2a40000000-0x7f2a80000000 1g\n\n";
  cr_assert_eq(load(s, false, reg, err, sizeof err), 0, "%s", err);
  ts_access(s, 0x7f2a00000010ull, 1, 'R');
  ts_access(s, 0x7f2a001ff000ull, 1, 'R');   /* same 2M page */
  ts_access(s, 0x7f2a00700000ull, 1, 'R');   /* second line's 2M page */
  ts_access(s, 0x7f2a00800000ull, 1, 'R');
  ts_access(s, 0x7f2a00801000ull, 1, 'R');   /* 4k range: a second page */
  ts_access(s, 0x7f2a7fff0000ull, 1, 'R');   /* 1g */
  ts_access(s, 0x1000, 1, 'R');              /* outside: the default 4k */
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->distinct_pages[TS_PS_2M], 2);
  cr_expect_eq(st->distinct_pages[TS_PS_4K], 3);
  cr_expect_eq(st->distinct_pages[TS_PS_1G], 1);
  cr_expect_eq(st->walk_levels, 3 + 3 + 4 + 4 + 2 + 4);
  /* to map every range: one PT (the 4k range), PDs for the 2m/4k ranges (one 1G region), ... */
  cr_expect_eq(st->mapped_pt_pages[1], 1);
  cr_expect_eq(st->mapped_pt_pages[2], 1);
  cr_expect_eq(st->mapped_pt_pages[3], 1);
  cr_expect_eq(st->mapped_pt_pages[4], 1);
  ts_sim_free(s);
}

static void bad_regions(const char *text, const char *want) {
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  cr_expect_eq(load(s, false, text, err, sizeof err), -1, "accepted: %s", text);
  cr_expect(strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
  ts_sim_free(s);
}

Test(maps, bad_regions_lines_are_reported_with_their_line_number) {
  bad_regions("# ok\n0x1000-0x2000 4k\nzzz 4k\n", ":3: expected START-END");
  bad_regions("0x1000-0x2000 8k\n", ":1: expected a page size 4k, 2m or 1g");
  bad_regions("0x1000-0x201000 2m\n", ":1: range 0x1000-0x201000 is not 2 MiB aligned");
  bad_regions("0x1000-0x3000 4k\n0x2000-0x4000 4k\n", ":2: range 0x2000-0x4000 overlaps");
  bad_regions("0x3000-0x1000 4k\n", ":1: empty range");
  bad_regions("0x1000-0x2000 4k thp extra\n", "at most one source word");
  bad_regions("0xffff800000000000-0xffff800000001000 4k\n", "beyond the 48-bit address space");
}

Test(maps, regions_file_that_does_not_exist_is_named) {
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  cr_expect_eq(ts_sim_load_regions(s, "/nonexistent/r", err, sizeof err), -1);
  cr_expect(strstr(err, "/nonexistent/r: cannot open"), "%s", err);
  ts_sim_free(s);
}

static const char smaps[] =
    "55d4c0a00000-55d4c0a21000 rw-p 00000000 00:00 0                          [heap]\n"
    "Size:                132 kB\n"
    "KernelPageSize:        4 kB\n"
    "MMUPageSize:           4 kB\n"
    "AnonHugePages:         0 kB\n"
    "VmFlags: rd wr mr mw me ac sd\n"
    "7f0000100000-7f0000a00000 rw-p 00000000 00:00 0 \n"
    "Size:               9216 kB\n"
    "KernelPageSize:        4 kB\n"
    "AnonHugePages:      4096 kB\n"
    "THPeligible:    1\n"
    "7f0040000000-7f0040400000 rw-s 00000000 00:0f 1234                       /dev/hugepages/x\n"
    "KernelPageSize:     2048 kB\n"
    "AnonHugePages:         0 kB\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n"
    "KernelPageSize:        4 kB\n";

Test(maps, smaps_kernel_page_size_and_anon_huge_pages_set_page_sizes) {
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  cr_assert_eq(load(s, true, smaps, err, sizeof err), 0, "%s", err);
  ts_access(s, 0x55d4c0a00000ull, 1, 'R');   /* heap: 4k */
  ts_access(s, 0x7f0000100000ull, 1, 'R');   /* THP area, before the first 2M boundary: 4k */
  ts_access(s, 0x7f0000200000ull, 1, 'R');   /* aligned part: 2m */
  ts_access(s, 0x7f00003ff000ull, 1, 'R');   /* same 2M page */
  ts_access(s, 0x7f0000800000ull, 1, 'R');   /* 0x800000-0xa00000 is aligned too: 2m */
  ts_access(s, 0x7f0040200000ull, 1, 'R');   /* hugetlbfs: 2m */
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->distinct_pages[TS_PS_4K], 2);
  cr_expect_eq(st->distinct_pages[TS_PS_2M], 3);
  ts_sim_free(s);
}

Test(maps, regions_take_precedence_over_smaps) {
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  cr_assert_eq(load(s, true, smaps, err, sizeof err), 0, "%s", err);
  cr_assert_eq(load(s, false, "0x55d4c0a00000-0x55d4c0a01000 4k\n0x7f0000200000-0x7f0000400000 4k\n", err, sizeof err), 0, "%s", err);
  ts_access(s, 0x7f0000200000ull, 1, 'R');
  ts_access(s, 0x7f0000201000ull, 1, 'R');
  cr_expect_eq(ts_sim_stats(s)->distinct_pages[TS_PS_4K], 2);
  ts_sim_free(s);
}

Test(maps, bad_smaps_lines_are_reported_with_their_line_number) {
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  cr_expect_eq(load(s, true, "1000-2000 rw-p 0 0:0 0\nKernelPageSize: 64 kB\n", err, sizeof err), -1);
  cr_expect(strstr(err, ":1: KernelPageSize 64 kB: expected 4, 2048 or 1048576"), "%s", err);
  cr_expect_eq(load(s, true, "1000-2000 rw-p 0 0:0 0\nAnonHugePages: lots\n", err, sizeof err), -1);
  cr_expect(strstr(err, ":2: expected a size in kB"), "%s", err);
  cr_expect_eq(load(s, true, "hello world\n", err, sizeof err), -1);
  cr_expect(strstr(err, ":1: expected an area header"), "%s", err);
  ts_sim_free(s);
}
