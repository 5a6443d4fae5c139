/* Real programs run whole under the allocator under test (inherited through LD_PRELOAD), one
 * after another, each on an input this workload writes (seeded, so every allocator gets the same
 * one) with --n items:
 *
 *   --prog python  a dict of n entries (a list, a string, a dict each), sorted by its strings
 *   --prog perl    a hash of n strings of 0-59 bytes, its keys sorted
 *   --prog lua     a table of n records (a string key, a string value), a third of them indexed
 *   --prog sqlite  sqlite3 in memory: n rows of a table with a text index, inserted in one
 *                  transaction
 *   --prog z3      an integer constraint problem of n/2500 variables and n/750 clauses
 *   --prog gs      Ghostscript rendering n/30 filled random polygons at 150 dpi
 *   --prog jq      jq selecting a third of a JSON array of n objects (a string, a list of five
 *                  strings, an object each) and counting them
 *   --prog xz      xz -3 (one thread) compressing n lines of text (its 6.8, 8.7 and 16.8 MB
 *                  buffers: large blocks)
 *   --prog sort    GNU sort -n of n random numbers
 *   --prog awk     awk appending n numbers to the strings of 100003 keys
 *   --prog tcl     tclsh building a dict of n lists and walking it
 *   --prog node    node building a Map of n objects and walking it
 *   --prog cc1     GCC's compiler proper (cc1 -O2, without the driver, whose children a sample
 *                  of one process would miss) on n small functions
 *
 * ns_per_op = wall time per run (spawn to exit, output discarded). Memory: the largest RSS +
 * hugetlb pages any run reached, sampled from /proc/PID/status every millisecond (hugetlb pages
 * have no kernel-kept peak) and never below the run's kernel-kept peak RSS (wait4). These rows
 * measure the target on programs in general: time against tcmalloc and jemalloc, memory
 * against jemalloc. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wl_common.h"
#include "wl_foreign.h"

static const char *prog = "python";
static unsigned long n_items = 300000, n_ops = 3;
static char dir[128];

static char input[160]; /* the one file the program reads, in dir */

/* The input and its directory go at exit, also when wl_die stops the run (a program that
 * failed): children leave through _exit and never run this. */
static void remove_input(void) {
  if (input[0]) unlink(input);
  if (dir[0]) rmdir(dir);
}

/* Opens the input for writing in a new temporary directory (made here: a bad --prog leaves
 * none); input_done closes it. */
static FILE *input_open(const char *name) {
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || tmp[0] == 0 || strlen(tmp) > 100) tmp = "/tmp";
  snprintf(dir, sizeof dir, "%s/wl_programs_XXXXXX", tmp);
  if (mkdtemp(dir) == NULL) wl_die("mkdtemp: %s", strerror(errno));
  atexit(remove_input);
  snprintf(input, sizeof input, "%s/%s", dir, name);
  FILE *f = fopen(input, "w");
  if (f == NULL) wl_die("cannot write %s: %s", input, strerror(errno));
  return f;
}
static void input_done(FILE *f) {
  if (ferror(f) || fclose(f) != 0) wl_die("cannot write %s: %s", input, strerror(errno));
}
static void write_file(const char *name, const char *text) {
  FILE *f = input_open(name);
  fputs(text, f);
  input_done(f);
}

/* The argv being built: arg() appends one word. */
static char words[8][160];
static char *cmd_argv[9];
static int n_words;
static void arg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void arg(const char *fmt, ...) {
  if (n_words == 8) wl_die("too many arguments");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(words[n_words], sizeof words[0], fmt, ap);
  va_end(ap);
  cmd_argv[n_words] = words[n_words];
  cmd_argv[++n_words] = NULL;
}

/* The input of each program; returns the argv to run (paths inside dir). */
static char **setup(void) {
  static char text[1 << 16];
  uint64_t s = wl_seed;
  if (!strcmp(prog, "python")) {
    snprintf(text, sizeof text,
             "d = {}\nfor i in range(%lu): d[str(i)] = [i, str(i) * 3, {'a': i}]\n"
             "l = sorted(d.values(), key=lambda v: v[1])\nprint(len(l))\n", n_items);
    write_file("p.py", text);
    /* Debian's, not a version manager's shim on PATH (pyenv's re-executes: 0.3 s a start) */
    arg("%s", access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3");
    arg("%s", input);
  } else if (!strcmp(prog, "perl")) {
    snprintf(text, sizeof text,
             "my %%h; $h{$_} = \"x\" x ($_ %% 60) for 1..%lu; my @k = sort keys %%h; print scalar(@k), \"\\n\";\n",
             n_items);
    write_file("p.pl", text);
    arg("perl");
    arg("%s", input);
  } else if (!strcmp(prog, "lua")) {
    snprintf(text, sizeof text,
             "local t = {} for i = 1, %lu do t[i] = {k = tostring(i), v = string.rep('x', i %% 50)} end\n"
             "local s = {} for i = 1, %lu, 3 do s[t[i].k] = t[i] end\n"
             "local n = 0 for k, v in pairs(s) do n = n + #v.v end print(n)\n", n_items, n_items);
    write_file("p.lua", text);
    arg("lua5.4");
    arg("%s", input);
  } else if (!strcmp(prog, "sqlite")) {
    snprintf(text, sizeof text,
             "create table t(a integer primary key, b text, c int);\ncreate index tb on t(b);\nbegin;\n"
             "with recursive n(i) as (select 0 union all select i + 1 from n where i < %lu)\n"
             "insert into t(b, c) select printf('%%08x%%08x-%%d', (i * 2654435761) %% 4294967296,"
             " (i * 40503 + 7) %% 4294967296, i), i from n;\ncommit;\nselect count(*) from t;\n",
             n_items - 1);
    write_file("p.sql", text);
    arg("sqlite3");
    arg(":memory:");
    arg("-init");
    arg("%s", input);
    arg(".quit");
  } else if (!strcmp(prog, "z3")) {
    unsigned long vars = n_items / 2500 < 8 ? 8 : n_items / 2500, clauses = n_items / 750 < 16 ? 16 : n_items / 750;
    size_t len = 0;
    for (unsigned long v = 0; v < vars; v++)
      len += (size_t)snprintf(text + len, sizeof text - len, "(declare-const x%lu Int)\n", v);
    for (unsigned long c = 0; c < clauses && len < sizeof text - 200; c++) {
      unsigned long x = wl_rand(&s) % vars, y = wl_rand(&s) % vars, z = wl_rand(&s) % vars;
      long k1 = (long)wl_rand_range(&s, 0, 100) - 50, k2 = (long)wl_rand_range(&s, 0, 100) - 50;
      len += (size_t)snprintf(text + len, sizeof text - len,
                              "(assert (or (< (+ x%lu x%lu) %ld) (> (- x%lu x%lu) %ld) (= (* 2 x%lu) (+ x%lu %lu))))\n",
                              x, y, k1, y, z, k2, z, x, (unsigned long)wl_rand_range(&s, 0, 7));
    }
    for (unsigned long v = 0; v < vars && len < sizeof text - 100; v++)
      len += (size_t)snprintf(text + len, sizeof text - len, "(assert (and (>= x%lu -100) (<= x%lu 100)))\n", v, v);
    if (len >= sizeof text - 40) wl_die("--n %lu is too large for z3's input", n_items);
    snprintf(text + len, sizeof text - len, "(check-sat)\n(get-model)\n");
    write_file("p.smt2", text);
    arg("z3");
    arg("%s", input);
  } else if (!strcmp(prog, "gs")) {
    snprintf(text, sizeof text,
             "%%!PS\n%lu srand\n/r { rand 600 mod 24 add } def\n"
             "1 1 %lu { pop newpath r r moveto 6 { r r lineto } repeat closepath rand 100 mod 100 div setgray fill } for\n"
             "showpage\n", wl_seed % 100000, n_items / 30 < 1 ? 1 : n_items / 30);
    write_file("p.ps", text);
    arg("gs");
    arg("-q");
    arg("-dNOPAUSE");
    arg("-dBATCH");
    arg("-sDEVICE=png16m");
    arg("-r150");
    arg("-sOutputFile=/dev/null");
    arg("%s", input);
  } else if (!strcmp(prog, "jq")) {
    FILE *f = input_open("p.json");
    for (unsigned long i = 0; i < n_items; i++) {
      fprintf(f, "%s{\"id\":%lu,\"name\":\"n%lx\",\"tags\":[", i ? ",\n" : "[", i, (unsigned long)wl_rand(&s));
      for (int t = 0; t < 5; t++) fprintf(f, "%s\"%lx\"", t ? "," : "", (unsigned long)(wl_rand(&s) >> (t * 8)));
      fprintf(f, "],\"v\":{\"a\":%lu,\"b\":[1,2,3]}}", i);
    }
    fputs("]\n", f);
    input_done(f);
    arg("jq");
    arg("[.[] | select(.id %% 3 == 0) | {id, n: .name, t: (.tags | length)}] | length");
    arg("%s", input);
  } else if (!strcmp(prog, "xz")) {
    FILE *f = input_open("p.txt");
    for (unsigned long i = 0; i < n_items; i++) /* a tenth of the words repeat: work for the matcher */
      fprintf(f, "key-%012lu value %lu word-%lu\n", i, (unsigned long)wl_rand(&s) % 1000000, (unsigned long)wl_rand(&s) % (n_items / 10 + 1));
    input_done(f);
    arg("xz");
    arg("-3");
    arg("-T1");
    arg("-c");
    arg("%s", input);
  } else if (!strcmp(prog, "sort") || !strcmp(prog, "awk")) {
    FILE *f = input_open("p.txt");
    for (unsigned long i = 0; i < n_items; i++) fprintf(f, "%lu\n", (unsigned long)wl_rand(&s) % 1000000000);
    input_done(f);
    if (!strcmp(prog, "sort")) {
      arg("sort");
      arg("-n");
    } else {
      arg("awk");
      arg("{a[$1 %% 100003] = a[$1 %% 100003] \" \" $1} END {n = 0; for (k in a) n += length(a[k]); print n}");
    }
    arg("%s", input);
  } else if (!strcmp(prog, "tcl")) {
    snprintf(text, sizeof text,
             "set d [dict create]\nfor {set i 0} {$i < %lu} {incr i} { dict set d k$i [list $i v$i [expr {$i * 7}]] }\n"
             "set n 0\ndict for {k v} $d { incr n [string length [lindex $v 1]] }\nputs $n\n", n_items);
    write_file("p.tcl", text);
    arg("tclsh");
    arg("%s", input);
  } else if (!strcmp(prog, "node")) {
    snprintf(text, sizeof text,
             "const m = new Map();\nfor (let i = 0; i < %lu; i++) m.set('k' + i, {i, s: 'v' + i, l: [i, i + 1]});\n"
             "let n = 0;\nfor (const [k, v] of m) n += v.s.length + v.l.length;\nconsole.log(n);\n", n_items);
    write_file("p.js", text);
    arg("node");
    arg("%s", input);
  } else if (!strcmp(prog, "cc1")) {
    char cc1[160] = "";
    FILE *p = popen("gcc -print-prog-name=cc1", "r");
    if (p == NULL || fgets(cc1, sizeof cc1, p) == NULL) wl_die("gcc -print-prog-name=cc1 gave nothing");
    pclose(p);
    cc1[strcspn(cc1, "\n")] = 0;
    if (access(cc1, X_OK) != 0) wl_die("gcc's cc1 is not at '%s'", cc1);
    FILE *f = input_open("p.c");
    for (unsigned long i = 0; i < n_items; i++)
      fprintf(f, "static int f%lu(const int *a, int n) { int s = %lu; for (int i = 0; i < n; i++) { s += a[i] * %lu; "
                 "if (s > %lu) s -= a[i / 2]; } return s; }\nint g%lu(const int *a) { return f%lu(a, %lu) + f%lu(a, 3); }\n",
              i, i, i % 7 + 1, i * 13, i, i, i % 50, i);
    input_done(f);
    arg("%s", cc1);
    arg("-quiet");
    arg("-O2");
    arg("%s", input);
    arg("-o");
    arg("/dev/null");
  } else {
    wl_die("--prog must be python, perl, lua, sqlite, z3, gs, jq, xz, sort, awk, tcl, node or cc1, got '%s'", prog);
  }
  return cmd_argv;
}

/* One run: its wall time; *rss_kb and *huge_kb at its largest sampled RSS + hugetlb. */
static double run_once(char **argv, long *rss_kb, long *huge_kb) {
  double t0 = wl_now_ns();
  pid_t pid = wl_spawn_quiet(argv, -1);
  long best_rss = 0, best_huge = 0;
  int st = 0;
  struct rusage ru;
  for (;;) {
    pid_t w = wait4(pid, &st, WNOHANG, &ru);
    if (w == pid) break;
    if (w < 0) wl_die("wait4 %s: %s", argv[0], strerror(errno));
    char text[8192]; /* one read: VmRSS and HugetlbPages of the same moment */
    if (wl_status_read((int)pid, text, sizeof text) > 0) {
      long r = wl_status_field(text, "VmRSS:"), h = wl_status_field(text, "HugetlbPages:");
      if (r < 0) r = 0; /* a zombie's status has no VmRSS */
      if (h < 0) h = 0;
      if (r + h > best_rss + best_huge) best_rss = r, best_huge = h;
    }
    usleep(1000);
  }
  double ns = wl_now_ns() - t0;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    wl_die("%s exited with %s %d", argv[0], WIFEXITED(st) ? "status" : "signal",
           WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  if (ru.ru_maxrss > best_rss) best_rss = ru.ru_maxrss; /* the kernel's peak RSS, between samples */
  *rss_kb = best_rss;
  *huge_kb = best_huge;
  return ns;
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"prog", "python, perl, lua, sqlite, z3, gs, jq, xz, sort, awk, tcl, node or cc1", 's', &prog},
    {"n", "items of the program's input (see the file's comment)", 'u', &n_items},
    {"ops", "runs, one after another", 'u', &n_ops},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_programs", argc, argv, flags);
  if (n_ops < 1 || n_items < 1) wl_die("--ops and --n must be at least 1");
  char **cmd = setup();
  long peak_rss = 0, peak_huge = 0;
  double total = 0;
  for (unsigned long i = 0; i < n_ops; i++) {
    long r, h;
    total += run_once(cmd, &r, &h);
    if (r + h > peak_rss + peak_huge) peak_rss = r, peak_huge = h;
  }
  wl_peak_rss_override_kb = peak_rss;
  wl_hugetlb_override_kb = peak_huge;
  char name[32], extra[160];
  snprintf(name, sizeof name, "prog-%s", prog);
  snprintf(extra, sizeof extra, "ns_per_op=%.2f op=run ops=%lu n=%lu", total / (double)n_ops, n_ops, n_items);
  wl_result(name, extra, NULL);
  return 0;
}
