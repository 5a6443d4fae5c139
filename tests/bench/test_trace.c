/* A workload's --trace file is a valid binary trace (format in tlbsim(1), TRACE FORMATS) of the size asked,
 * and --smaps leaves a copy of /proc/self/smaps. Runs the built wl_records and wl_chase. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct { uint64_t addr; uint32_t size; uint8_t op, pad[3]; } rec_t;

/* Checks the file; returns the records other than B, and where the B record was (records
 * before it) in *marker, -1 when there is none. */
static long check_trace_marked(const char *path, int *ops_seen, long *marker) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "no trace at %s", path);
  char hdr[16];
  cr_assert_eq(fread(hdr, 1, 16, f), 16u, "short header");
  cr_assert_eq(memcmp(hdr, "TLBPTRC\0", 8), 0, "bad magic");
  uint32_t ver, rb;
  memcpy(&ver, hdr + 8, 4);
  memcpy(&rb, hdr + 12, 4);
  cr_assert_eq(ver, 1u);
  cr_assert_eq(rb, 16u);
  rec_t r;
  long n = 0;
  *marker = -1;
  while (fread(&r, sizeof r, 1, f) == 1) {
    if (r.op == 'B') {
      cr_assert_eq(*marker, -1, "a second B record after record %ld", n);
      cr_assert(r.addr == 0 && r.size == 0 && !r.pad[0] && !r.pad[1] && !r.pad[2], "B record with operands");
      *marker = n;
      continue;
    }
    cr_assert(strchr("RWIPC", r.op) && r.op, "record %ld: op 0x%x", n, r.op);
    cr_assert(r.op == 'C' || r.addr != 0, "record %ld: null address", n);
    cr_assert_gt(r.size, 0u, "record %ld: zero size", n);
    cr_assert(!r.pad[0] && !r.pad[1] && !r.pad[2]);
    ops_seen[r.op]++;
    n++;
  }
  struct stat st;
  cr_assert_eq(fstat(fileno(f), &st), 0);
  cr_assert_eq(st.st_size, 16 + (n + (*marker >= 0)) * 16, "no partial record at the end");
  fclose(f);
  return n;
}

static long check_trace(const char *path, int *ops_seen) {
  long marker;
  long n = check_trace_marked(path, ops_seen, &marker);
  cr_assert(marker >= 0 && marker <= n / 4, "the B record at %ld of %ld records", marker, n);
  return n;
}

static void run(const char *cmd) {
  int rc = system(cmd);
  cr_assert_eq(rc, 0, "failed: %s", cmd);
}

Test(trace, records_workload_writes_exactly_trace_max_reads_and_an_smaps_copy) {
  char dir[] = "/tmp/tb-trace-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char cmd[1024], tr[256], sm[256];
  snprintf(tr, sizeof tr, "%s/r.trace", dir);
  snprintf(sm, sizeof sm, "%s/r.smaps", dir);
  snprintf(cmd, sizeof cmd, "%s/wl_records --records 300 --lookups 1000 --trace %s --smaps %s "
           "--trace-max 3000 >/dev/null", TB_WL_DIR, tr, sm);
  run(cmd);
  int ops[256] = {0};
  cr_assert_eq(check_trace(tr, ops), 3000);
  cr_assert_eq(ops['R'], 3000, "records' lookups only read");
  struct stat st;
  cr_assert_eq(stat(sm, &st), 0);
  cr_assert_gt(st.st_size, 100);
  snprintf(cmd, sizeof cmd, "grep -q KernelPageSize %s && rm -rf %s", sm, dir);
  run(cmd);
}

Test(trace, warming_chase_records_prefetches_next_to_reads) {
  char dir[] = "/tmp/tb-trace-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char cmd[1024], tr[256];
  snprintf(tr, sizeof tr, "%s/c.trace", dir);
  snprintf(cmd, sizeof cmd, "%s/wl_chase --nodes 200 --steps 1000 --warm 4 --trace %s --trace-max 1000 >/dev/null",
           TB_WL_DIR, tr);
  run(cmd);
  int ops[256] = {0};
  cr_assert_eq(check_trace(tr, ops), 1000);
  cr_assert_eq(ops['P'], 500);
  cr_assert_eq(ops['R'], 500);
  unlink(tr);
  rmdir(dir);
}

Test(workload, bad_flag_exits_2_with_a_message_naming_it) {
  char dir[] = "/tmp/tb-badflag-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char cmd[1024], err[256];
  snprintf(err, sizeof err, "%s/err", dir);
  /* The status of the workload itself, not of a pipe's last command; then its message. */
  snprintf(cmd, sizeof cmd, "%s/wl_records --recrods 5 >/dev/null 2>%s", TB_WL_DIR, err);
  int rc = system(cmd);
  cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "wl_records --recrods: status %d, expected exit 2", rc);
  snprintf(cmd, sizeof cmd, "grep -q \"unknown flag '--recrods'\" %s", err);
  run(cmd);
  snprintf(cmd, sizeof cmd, "%s/wl_index --keys lots >/dev/null 2>&1", TB_WL_DIR);
  rc = system(cmd);
  cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "wl_index --keys lots: status %d, expected exit 2", rc);
  unlink(err);
  rmdir(dir);
}

Test(trace, the_b_record_follows_the_warm_up_of_the_timed_run_and_tlbsim_measures_from_it) {
  char dir[] = "/tmp/tb-trace-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char cmd[1024], tr[256];
  snprintf(tr, sizeof tr, "%s/r.trace", dir);
  /* warm-up of the timed run: min(lookups / 10, records) = 100 lookups of 3 reads each */
  snprintf(cmd, sizeof cmd, "%s/wl_records --records 300 --lookups 1000 --trace %s --trace-max 3000 "
           "| grep -q ' trace_marker=300 '", TB_WL_DIR, tr);
  run(cmd);
  int ops[256] = {0};
  long marker;
  cr_assert_eq(check_trace_marked(tr, ops, &marker), 3000);
  cr_assert_eq(marker, 300);
  snprintf(cmd, sizeof cmd, "%s/../tlbsim --json --warmup marker %s | grep -q '\"warmup_accesses\": 300,'",
           TB_WL_DIR, tr);
  run(cmd);
  /* a warm-up longer than a quarter of the trace is cut there */
  snprintf(cmd, sizeof cmd, "%s/wl_records --records 3000 --lookups 10000 --trace %s --trace-max 3000 "
           "| grep -q ' trace_marker=750 '", TB_WL_DIR, tr);
  run(cmd);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  run(cmd);
}
