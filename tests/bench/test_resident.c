/* The TLB entries for a program's resident memory, from its smaps: checked on a made-up smaps
 * against sums done by hand, and on this process's own. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wl_foreign.h"

static const char smaps[] =
    /* the program's text: file-backed, 4 KiB pages */
    "55d0c0a00000-55d0c0b00000 r-xp 00000000 08:01 1234 /usr/bin/prog\n"
    "Size:               1024 kB\nKernelPageSize:        4 kB\nRss:                 400 kB\n"
    "Anonymous:             0 kB\nAnonHugePages:         0 kB\nFilePmdMapped:         0 kB\n"
    "Shared_Hugetlb:        0 kB\nPrivate_Hugetlb:       0 kB\nVmFlags: rd ex mr mw me\n"
    /* a heap with THP: 3 huge pages and 100 small ones */
    "7f0000000000-7f0000800000 rw-p 00000000 00:00 0\n"
    "Size:               8192 kB\nKernelPageSize:        4 kB\nRss:                6544 kB\n"
    "Anonymous:          6544 kB\nAnonHugePages:      6144 kB\nShmemPmdMapped:        0 kB\n"
    "Shared_Hugetlb:        0 kB\nPrivate_Hugetlb:       0 kB\nVmFlags: rd wr mr mw me ac\n"
    /* hugetlbfs, 2 MiB pages: 5 of them (not in Rss) */
    "7f1000000000-7f1001000000 rw-p 00000000 00:0f 99 /anon_hugepage (deleted)\n"
    "Size:              16384 kB\nKernelPageSize:     2048 kB\nRss:                   0 kB\n"
    "Anonymous:             0 kB\nShared_Hugetlb:        0 kB\nPrivate_Hugetlb:   10240 kB\n"
    "VmFlags: rd wr mr mw me de ht\n"
    /* hugetlbfs, 1 GiB pages: 2 */
    "7f4000000000-7f4080000000 rw-s 00000000 00:10 7 /dev/hugepages1G/x\n"
    "Size:            2097152 kB\nKernelPageSize:  1048576 kB\nRss:                   0 kB\n"
    "Anonymous:             0 kB\nShared_Hugetlb:  2097152 kB\nPrivate_Hugetlb:       0 kB\n"
    /* a mapped file with one PMD-mapped 2 MiB page and 40 KiB more, 8 KiB of it copied on write */
    "7f5000000000-7f5000400000 rw-p 00000000 08:01 55 /data/file\n"
    "Size:               4096 kB\nKernelPageSize:        4 kB\nRss:                2088 kB\n"
    "Anonymous:             8 kB\nAnonHugePages:         0 kB\nFilePmdMapped:      2048 kB\n";

Test(resident, entries_per_huge_page_and_per_other_4k_page_by_kind) {
  char path[] = "/tmp/tb-smaps-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, smaps, sizeof smaps - 1), (ssize_t)(sizeof smaps - 1));
  close(fd);
  wl_resident_t r;
  cr_assert_eq(wl_resident_file(path, &r), 0);
  unlink(path);
  cr_expect_eq(r.rss_kb, 400 + 6544 + 2088);
  cr_expect_eq(r.hugetlb_kb, 10240 + 2097152);
  cr_expect_eq(r.anon_kb, 6544 + 8);
  cr_expect_eq(r.file_kb, 400 + 2080);
  cr_expect_eq(r.thp_kb, 6144);
  cr_expect_eq(r.file_pmd_kb, 2048);
  /* anonymous: 3 THP + 100 small + 5 hugetlb 2M + 2 hugetlb 1G + 2 copied-on-write pages */
  cr_expect_eq(r.entries_anon, 3 + 100 + 5 + 2 + 2, "%ld", r.entries_anon);
  /* file: 100 text pages + 1 PMD + 8 more 4 KiB pages of the file */
  cr_expect_eq(r.entries_file, 100 + 1 + 8, "%ld", r.entries_file);
  char kv[400];
  wl_resident_kv(&r, kv, sizeof kv);
  cr_expect(strstr(kv, " res_entries=221 res_entries_anon=112 res_entries_file=109 "), "%s", kv);
}

Test(resident, this_process_holds_what_it_touched) {
  wl_resident_t a, b;
  cr_assert_eq(wl_resident(getpid(), &a), 0);
  size_t n = 16 << 20;
  char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert(p != MAP_FAILED);
  madvise(p, n, MADV_NOHUGEPAGE);
  memset(p, 1, n);
  cr_assert_eq(wl_resident(getpid(), &b), 0);
  long grew = b.entries_anon - a.entries_anon, slack = 256;
#ifdef __SANITIZE_ADDRESS__
  slack += 4096 / 8; /* ASan's shadow of the 16 MiB: 2 MiB more, on 4 KiB pages where THP is off */
#endif
  cr_expect(grew >= 4096 && grew < 4096 + slack, "16 MiB of 4 KiB pages: %ld more entries", grew);
  cr_expect(b.entries_file > 10, "code and libraries are file-backed");
  cr_expect_eq(wl_resident(999999999, &b), -1);
  munmap(p, n);
}

/* valgrind lackey's log with a mark page: the region between the program's two writes to it is
 * traced, the B record at the first, nothing after the second; without marks, the last
 * wl_trace_max records with B after their first quarter. */
#include "wl_common.h"

static size_t convert_text(const char *text, uintptr_t mark, wl_lackey_span_t *span) {
  char path[] = "/tmp/tb-lackey-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  lseek(fd, 0, SEEK_SET);
  char trace[] = "/tmp/tb-lktrace-XXXXXX";
  int tfd = mkstemp(trace);
  cr_assert(tfd >= 0);
  close(tfd);
  wl_trace_path = trace;
  wl_trace_open();
  size_t n = wl_lackey_convert(fd, mark, span);
  wl_trace_close();
  close(fd);
  unlink(path);
  unlink(trace);
  return n;
}

Test(lackey, the_marks_bound_the_measured_region) {
  char text[8192] = "==1== Lackey\nI  04000000,3\n";
  for (int i = 0; i < 10; i++) strcat(text, " L 1000,8\n");   /* before: start-up, warm-up */
  strcat(text, " S 5a5a00000000,8\n");                         /* start mark */
  for (int i = 0; i < 30; i++) strcat(text, i % 3 ? " L 2000,8\n" : " M 3000,4\n");
  strcat(text, " S 5a5a00000800,8\n");                         /* end mark */
  for (int i = 0; i < 7; i++) strcat(text, " S 4000,8\n");     /* exit: not traced */
  wl_trace_max = 1000;
  wl_lackey_span_t span;
  size_t total = convert_text(text, 0x5a5a00000000ull, &span);
  cr_assert_eq(total, 10 + 2 + 30 + 7, "every data access lackey reported is counted");
  cr_assert(span.marked);
  cr_assert_eq(span.between, 30);
  cr_assert_eq(span.measured, 30);
  cr_assert_eq(wl_trace_count(), 10 + 30, "warm-up + measured records, no mark, nothing after the end");
}

Test(lackey, a_window_shorter_than_the_phase_keeps_its_end) {
  char text[8192] = "";
  strcat(text, " S 5a5a00000000,8\n");
  for (int i = 0; i < 100; i++) strcat(text, " L 2000,8\n");
  strcat(text, " S 5a5a00000800,8\n");
  wl_trace_max = 40;
  wl_lackey_span_t span;
  convert_text(text, 0x5a5a00000000ull, &span);
  cr_assert(span.marked);
  cr_assert_eq(span.between, 100);
  cr_assert_eq(span.measured, 30, "B after the window's first quarter: 30 of its 40 records");
  cr_assert_eq(wl_trace_count(), 40);
  wl_trace_max = 3000000;
}
