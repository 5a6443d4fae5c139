/* A real program: perl building a hash of --keys strings of --datasize bytes (more than the L2
 * TLB reaches with 4 KiB pages: 3072 x 4 KiB = 12 MiB at the default sizes), then --lookups
 * random lookups, timed by perl itself (Time::HiRes). perl's malloc is the allocator under test
 * (it inherits LD_PRELOAD and the allocator's settings; Debian's perl uses the system malloc).
 *
 * ns_per_op = the lookup phase's time per lookup. At its peak (the hash built and used, before
 * perl frees anything) perl waits on stdin while this workload reads its /proc/PID/smaps: the TLB
 * entries for its resident memory (wl_foreign.h), VmHWM and HugetlbPages. No trace. */
#define _GNU_SOURCE
#include "wl_common.h"
#include "wl_foreign.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long n_keys = 100000, n_lookups = 1000000, datasize = 100;
static const char *perl_bin = "/usr/bin/perl";

static const char script[] =
    "use strict; use Time::HiRes qw(time);\n"
    "$| = 1;\n"
    "my ($n, $q, $d, $seed) = @ARGV;\n"
    "srand($seed);\n"
    "my %h;\n"
    "my $v = 'x' x $d;\n"
    "for my $i (1..$n) { $h{\"key:$i\"} = $v . $i; }\n"
    "my $sum = 0;\n"
    "for (1..($q / 10)) { $sum += length($h{\"key:\" . (1 + int(rand($n)))}); }\n"   /* warm-up */
    "my $t0 = time;\n"
    "for (1..$q) { $sum += length($h{\"key:\" . (1 + int(rand($n)))}); }\n"
    "my $t1 = time;\n"
    "printf \"TLBBENCH-DONE ns=%.0f sum=%d keys=%d\\n\", ($t1 - $t0) * 1e9, $sum, scalar(keys %h);\n"
    "<STDIN>;\n";

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"keys", "hash entries", 'u', &n_keys},
    {"lookups", "random lookups in the timed phase", 'u', &n_lookups},
    {"datasize", "bytes per value", 'u', &datasize},
    {"perl", "the perl binary", 's', &perl_bin},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_perl", argc, argv, flags);
  if (n_keys < 10 || n_lookups < 10 || !datasize) wl_die("--keys and --lookups must be at least 10, --datasize positive");
  if (access(perl_bin, X_OK)) wl_die("perl not found at %s (pass --perl PATH)", perl_bin);
  if (wl_trace_path) fprintf(stderr, "wl_perl: --trace ignored: perl's accesses are not recorded\n");
  const char *tmp = getenv("TMPDIR");
  char log[4096], a[4][24];
  snprintf(log, sizeof log, "%s/wl_perl.%d.log", tmp && *tmp ? tmp : "/tmp", (int)getpid());
  snprintf(a[0], sizeof a[0], "%lu", n_keys);
  snprintf(a[1], sizeof a[1], "%lu", n_lookups);
  snprintf(a[2], sizeof a[2], "%lu", datasize);
  snprintf(a[3], sizeof a[3], "%lu", wl_seed);
  char *pargv[] = {(char *)perl_bin, "-e", (char *)script, a[0], a[1], a[2], a[3], NULL};
  wl_child_t c;
  wl_child_start(&c, pargv, NULL, log);
  const char *done = wl_child_wait(&c, "TLBBENCH-DONE ", 600, NULL, NULL, NULL);
  double ns = -1, keys = -1;
  const char *p;
  if ((p = strstr(done, "ns="))) ns = strtod(p + 3, NULL);
  if ((p = strstr(done, "keys="))) keys = strtod(p + 5, NULL);
  if (!(ns > 0) || keys != (double)n_keys) wl_die("perl reported '%s' (expected ns= and keys=%lu)", done, n_keys);
  /* the peak: perl waits on stdin */
  wl_resident_t r;
  if (wl_resident(c.pid, &r)) wl_die("cannot read /proc/%d/smaps", (int)c.pid);
  wl_peak_rss_override_kb = wl_status_kb(c.pid, "VmHWM:");
  wl_hugetlb_override_kb = wl_status_kb(c.pid, "HugetlbPages:");
  wl_child_finish(&c, 60, NULL);
  unlink(log);
  char res[400], extra[800];
  wl_resident_kv(&r, res, sizeof res);
  snprintf(extra, sizeof extra, "ns_per_op=%.2f op=lookup ops=%lu keys=%lu datasize=%lu traced=no "
           "tlb_source=unavailable:foreign-program%s", ns / (double)n_lookups, n_lookups, n_keys, datasize, res);
  wl_result("perl-hash", extra, NULL);
  return 0;
}
