/* tlbpack compare: trace one program under valgrind lackey twice, with jemalloc and with
 * tlbpack preloaded, and let tlbsim compare the two traces side by side. */
#include "cli.h"
#include "tlbsim.h" /* ts_presets() */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const jemalloc_candidates[] = {
    "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib64/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2",
    "/usr/local/lib/libjemalloc.so.2", NULL};

static void compare_usage(FILE *out) {
  fprintf(out,
          "usage: tlbpack compare [--cpu PRESET] [--json] [--keep DIR] [--lib PATH] [--jemalloc PATH]\n"
          "                       [--] PROGRAM [ARGS...]\n"
          "\n"
          "Runs PROGRAM twice under valgrind's lackey tool (--trace-mem=yes), first with tlbpack\n"
          "preloaded (TLBPACK_CONF=regions:FILE records which of its ranges are huge pages), then\n"
          "with jemalloc, and prints tlbsim's side-by-side comparison of the two traces (A =\n"
          "jemalloc, B = tlbpack):\n"
          "TLB entries needed, misses, page walks and walk levels saved. jemalloc's memory is\n"
          "simulated on 4 KiB pages (it does not ask for huge pages by default).\n"
          "Lackey runs programs about 100x slower and its traces take ~16 bytes per access\n"
          "(jemalloc's is streamed into tlbsim; tlbpack's sits in a temporary directory until\n"
          "the end): use a short run of PROGRAM.\n"
          "\n"
          "  --cpu PRESET      tlbsim's TLB preset: core2, skylake, goldencove, zen2, zen3, zen4\n"
          "  --json            tlbsim's comparison as JSON\n"
          "  --keep DIR        keep the traces, the regions file and PROGRAM's output in DIR\n"
          "  --lib PATH        the libtlbpack.so to preload (default: found as `tlbpack run` does)\n"
          "  --jemalloc PATH   the jemalloc to preload (default: the system's libjemalloc.so.2)\n"
          "  -h, --help        this text\n"
          "\n"
          "Needs valgrind and tlbsim (beside tlbpack, in the installed bindir or on PATH).\n");
}

/* Starts argv with LD_PRELOAD/TLBPACK_CONF as given (NULL: unset) and stdout+stderr sent to
 * out_path. Returns the pid, or -1. */
static pid_t spawn_logged(char *const argv[], const char *preload, const char *conf, const char *out_path) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid != 0) return pid;
  int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) _exit(126);
  dup2(fd, 1);
  dup2(fd, 2);
  if (preload) setenv("LD_PRELOAD", preload, 1);
  else unsetenv("LD_PRELOAD");
  if (conf) setenv("TLBPACK_CONF", conf, 1);
  else unsetenv("TLBPACK_CONF");
  execvp(argv[0], argv);
  fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
  _exit(127);
}

/* Exit status of pid, 128+signal when killed, -1 when it cannot be waited for. */
static int wait_status(pid_t pid) {
  int st;
  if (pid < 0) return -1;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* valgrind --tool=lackey --trace-mem=yes --log-file=TRACE PROGRAM ARGS, started in the
 * background; the program's own output goes to DIR/LABEL.out. */
static pid_t start_trace(const char *valgrind, const char *label, char **prog, const char *dir,
                         const char *preload, const char *conf, const char *trace) {
  char log_opt[PATH_MAX + 16], out_path[PATH_MAX];
  snprintf(log_opt, sizeof log_opt, "--log-file=%s", trace);
  snprintf(out_path, sizeof out_path, "%s/%s.out", dir, label);
  int n = 0;
  while (prog[n]) n++;
  char **argv = calloc((size_t)n + 5, sizeof *argv);
  if (!argv) return -1;
  argv[0] = (char *)valgrind;
  argv[1] = "--tool=lackey";
  argv[2] = "--trace-mem=yes";
  argv[3] = log_opt;
  for (int i = 0; i < n; i++) argv[4 + i] = prog[i];
  fprintf(stderr, "tlbpack compare: tracing %s with %s (valgrind lackey)...\n", prog[0], label);
  pid_t pid = spawn_logged(argv, preload, conf, out_path);
  free(argv);
  return pid;
}

/* Judges a finished trace run; prints why it is unusable. Returns 0 when usable. */
static int check_trace(int status, const char *label, const char *prog, const char *dir) {
  if (status < 0 || status == 126 || status == 127) {
    fprintf(stderr, "tlbpack compare: could not run valgrind for the %s run (see %s/%s.out)\n", label, dir, label);
    return -1;
  }
  if (status != 0)
    fprintf(stderr, "tlbpack compare: note: %s exited with status %d in the %s run (its output: %s/%s.out)\n",
            prog, status, label, dir, label);
  return 0;
}

/* PROGRAM must be runnable before two slow traced runs are started. */
static int program_runnable(const char *prog) {
  char path[PATH_MAX];
  if (strchr(prog, '/')) return access(prog, X_OK) == 0;
  const char *p = getenv("PATH");
  while (p && *p) {
    const char *end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    snprintf(path, sizeof path, "%.*s/%s", (int)len, len ? p : ".", prog);
    if (access(path, X_OK) == 0) return 1;
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

static void remove_dir(const char *dir) {
  static const char *const files[] = {"jemalloc.trace", "jemalloc.out", "tlbpack.trace", "tlbpack.out",
                                      "tlbpack.regions", "compare.out", NULL};
  char p[PATH_MAX];
  for (int i = 0; files[i]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
}

/* The demand accesses tlbsim counted in each trace, read back from its report (the text's
 * "accesses (demand)" row, or the "accesses" of "a" then "b" in JSON). Returns 0 when found. */
static int report_accesses(const char *path, unsigned long long *a, unsigned long long *b) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[512];
  int found = 0;
  while (found < 2 && fgets(line, sizeof line, f)) {
    unsigned long long x, y;
    if (sscanf(line, "accesses (demand) %llu %llu", &x, &y) == 2) {
      *a = x, *b = y, found = 2;
    } else if (sscanf(line, " \"accesses\": %llu", &x) == 1) {
      if (found++ == 0) *a = x;
      else *b = x;
    }
  }
  fclose(f);
  return found == 2 ? 0 : -1;
}

/* Copies a small file to stdout. */
static void cat_file(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[8192];
  ssize_t n;
  fflush(stdout);
  while ((n = read(fd, buf, sizeof buf)) > 0)
    if (write(1, buf, (size_t)n) != n) break;
  close(fd);
}
/* ---- the command, in steps ------------------------------------------------------------- */
typedef struct compare_args_s {
  const char *cpu, *keep, *lib, *jemalloc;
  int json;
  char **prog; /* PROGRAM ARGS, NULL-terminated */
} compare_args_t;

/* The tools and libraries found, and the run's files. */
typedef struct compare_run_s {
  char tlbsim[PATH_MAX], valgrind[PATH_MAX], lib[PATH_MAX], je[PATH_MAX];
  char dir[PATH_MAX], je_trace[PATH_MAX], tp_trace[PATH_MAX], regions[PATH_MAX], conf[PATH_MAX + 16],
      sim_out[PATH_MAX];
} compare_run_t;

/* Parses the options into *a and checks --cpu against the simulator's presets. Returns -1
 * when the arguments are fine, else the exit status (0 after --help). */
static int compare_parse_args(int argc, char **argv, compare_args_t *a) {
  static const struct option opts[] = {{"cpu", required_argument, 0, 'c'},     {"json", no_argument, 0, 'j'},
                                       {"keep", required_argument, 0, 'k'},    {"lib", required_argument, 0, 'l'},
                                       {"jemalloc", required_argument, 0, 'J'}, {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  *a = (compare_args_t){0};
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+:c:jk:l:h", opts, NULL)) != -1) {
    switch (c) {
    case 'c': a->cpu = optarg; break;
    case 'j': a->json = 1; break;
    case 'k': a->keep = optarg; break;
    case 'l': a->lib = optarg; break;
    case 'J': a->jemalloc = optarg; break;
    case 'h': compare_usage(stdout); return 0;
    case ':': return tpc_usage_error("compare", "option '%s' needs a value", argv[optind - 1]);
    default:
      return tpc_usage_error("compare",
                             "unknown option '%s' (accepted: --cpu, --json, --keep, --lib, --jemalloc, --help)",
                             argv[optind - 1]);
    }
  }
  if (optind >= argc)
    return tpc_usage_error("compare", "no PROGRAM given (usage: tlbpack compare [OPTIONS] -- PROGRAM [ARGS])");
  a->prog = argv + optind;
  if (a->cpu) {
    /* the simulator's own list of presets */
    int ok = 0;
    char names[160] = "";
    for (const char *const *p = ts_presets(); *p; p++) {
      ok |= !strcmp(a->cpu, *p);
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "", *p);
    }
    if (!ok) return tpc_usage_error("compare", "--cpu '%s' is not a preset (accepted: %s)", a->cpu, names);
  }
  return -1;
}

/* Finds tlbsim, valgrind, libtlbpack.so and libjemalloc.so, and checks that PROGRAM can run
 * before two slow traced runs start. Returns -1 when all are there, else the exit status. */
static int compare_find_tools(const compare_args_t *a, compare_run_t *r) {
  if (tpc_find_tool("tlbsim", r->tlbsim, sizeof r->tlbsim) != 0)
    return tpc_fail("compare", "tlbsim not found (looked beside tlbpack, in the installed bindir and on PATH); "
                               "build it with make");
  if (tpc_find_tool("valgrind", r->valgrind, sizeof r->valgrind) != 0)
    return tpc_fail("compare", "valgrind not found on PATH; install it (apt-get install valgrind)");
  if (tpc_find_lib("compare", a->lib, r->lib, sizeof r->lib) != 0) return TPC_EXIT_FAIL;
  r->je[0] = 0;
  if (a->jemalloc) {
    if (access(a->jemalloc, R_OK) != 0)
      return tpc_fail("compare", "--jemalloc %s: %s (expected the path of libjemalloc.so)", a->jemalloc, strerror(errno));
    if (!tpc_is_elf(a->jemalloc))
      return tpc_fail("compare", "--jemalloc %s: not an ELF shared library (expected the path of libjemalloc.so)",
                      a->jemalloc);
    snprintf(r->je, sizeof r->je, "%s", a->jemalloc);
  } else {
    for (int i = 0; jemalloc_candidates[i] && !r->je[0]; i++)
      if (access(jemalloc_candidates[i], R_OK) == 0) snprintf(r->je, sizeof r->je, "%s", jemalloc_candidates[i]);
    if (!r->je[0])
      return tpc_fail("compare", "libjemalloc.so.2 not found (apt-get install libjemalloc2, or pass --jemalloc PATH)");
  }
  if (!program_runnable(a->prog[0]))
    return tpc_fail("compare", "cannot run '%s': not found%s", a->prog[0],
                    strchr(a->prog[0], '/') ? " or not executable" : " on PATH");
  return -1;
}

/* The run's directory (--keep DIR, or a temporary one) and the paths of its files. Returns -1
 * when made, else the exit status. */
static int compare_make_dir(const char *keep, compare_run_t *r) {
  if (keep) {
    if (mkdir(keep, 0755) != 0 && errno != EEXIST) return tpc_fail("compare", "--keep %s: %s", keep, strerror(errno));
    snprintf(r->dir, sizeof r->dir, "%s", keep);
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(r->dir, sizeof r->dir, "%s/tlbpack-compare-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(r->dir)) return tpc_fail("compare", "cannot create a directory in %s: %s", r->dir, strerror(errno));
  }
  snprintf(r->je_trace, sizeof r->je_trace, "%s/jemalloc.trace", r->dir);
  snprintf(r->tp_trace, sizeof r->tp_trace, "%s/tlbpack.trace", r->dir);
  snprintf(r->regions, sizeof r->regions, "%s/tlbpack.regions", r->dir);
  snprintf(r->sim_out, sizeof r->sim_out, "%s/compare.out", r->dir);
  snprintf(r->conf, sizeof r->conf, "regions:%s", r->regions);
  return -1;
}

/* tlbpack's traced run, first: its regions file, written at exit, must exist before tlbsim
 * starts. Returns 0 when the trace and the regions file are there. */
static int compare_trace_tlbpack(const compare_args_t *a, const compare_run_t *r) {
  if (check_trace(wait_status(start_trace(r->valgrind, "tlbpack", a->prog, r->dir, r->lib, r->conf, r->tp_trace)),
                  "tlbpack", a->prog[0], r->dir) != 0)
    return -1;
  if (access(r->regions, R_OK) != 0) {
    fprintf(stderr, "tlbpack compare: the tlbpack run wrote no regions file (%s): was %s really preloaded?\n",
            r->regions, r->lib);
    return -1;
  }
  return 0;
}

/* Starts tlbsim [--cpu X] [--json] --compare A [options for A] B [options for B] (tlbsim(1)):
 * jemalloc's trace on the default 4 KiB pages, tlbpack's with its regions file; its output goes
 * to the run's compare.out. */
static pid_t compare_start_tlbsim(const compare_args_t *a, compare_run_t *r) {
  char *sim_argv[16];
  int n = 0;
  sim_argv[n++] = r->tlbsim;
  if (a->cpu) sim_argv[n++] = "--cpu", sim_argv[n++] = (char *)a->cpu;
  if (a->json) sim_argv[n++] = "--json";
  sim_argv[n++] = "--compare";
  sim_argv[n++] = r->je_trace;
  sim_argv[n++] = "--label";
  sim_argv[n++] = "jemalloc";
  sim_argv[n++] = r->tp_trace;
  sim_argv[n++] = "--label";
  sim_argv[n++] = "tlbpack";
  sim_argv[n++] = "--regions";
  sim_argv[n++] = r->regions;
  sim_argv[n] = NULL;
  return spawn_logged(sim_argv, NULL, NULL, r->sim_out);
}

/* Runs jemalloc's trace into the FIFO tlbsim reads, then makes sure tlbsim sees the end of
 * that trace. Returns valgrind's status; sets *sim_status when tlbsim was seen to exit. */
static int compare_stream_jemalloc(const compare_args_t *a, const compare_run_t *r, pid_t sim_pid, int *sim_done,
                                   int *sim_status) {
  int je_status = wait_status(start_trace(r->valgrind, "jemalloc", a->prog, r->dir, r->je, NULL, r->je_trace));
  /* If valgrind never opened the FIFO, tlbsim waits in open() (or is about to): open and
   * close the write end once a reader is there, which hands it an end of file. ENXIO
   * means no reader yet, or tlbsim is already past this trace: poll until it exits. */
  for (;;) {
    int fd = open(r->je_trace, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      close(fd);
      break;
    }
    int st;
    if (errno != ENXIO) break;
    if (waitpid(sim_pid, &st, WNOHANG) == sim_pid) {
      *sim_done = 1;
      *sim_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      break;
    }
    usleep(20000);
  }
  return je_status;
}

/* jemalloc's traced run and the simulation of both traces; prints the comparison. Returns 0
 * when it was printed. */
static int compare_simulate(const compare_args_t *a, compare_run_t *r) {
  /* Without --keep, jemalloc's trace streams through a FIFO straight into tlbsim: lackey
   * traces take ~16 bytes per access, and this one never has to sit on disk. */
  int stream = !a->keep && mkfifo(r->je_trace, 0600) == 0;
  if (!stream) {
    if (check_trace(wait_status(start_trace(r->valgrind, "jemalloc", a->prog, r->dir, r->je, NULL, r->je_trace)),
                    "jemalloc", a->prog[0], r->dir) != 0)
      return -1;
  }
  pid_t sim_pid = compare_start_tlbsim(a, r);
  if (sim_pid < 0) {
    fprintf(stderr, "tlbpack compare: cannot start %s: %s\n", r->tlbsim, strerror(errno));
    return -1;
  }
  int je_status = 0, sim_status = -1, sim_done = 0;
  if (stream) je_status = compare_stream_jemalloc(a, r, sim_pid, &sim_done, &sim_status);
  if (!sim_done) sim_status = wait_status(sim_pid);
  if (stream && check_trace(je_status, "jemalloc", a->prog[0], r->dir) != 0) return -1;
  if (sim_status != 0) {
    fprintf(stderr, "tlbpack compare: %s --compare failed (status %d):\n", r->tlbsim, sim_status);
    cat_file(r->sim_out);
    return -1;
  }
  unsigned long long acc_je, acc_tp;
  if (report_accesses(r->sim_out, &acc_je, &acc_tp) == 0 && (acc_je == 0 || acc_tp == 0)) {
    const char *label = acc_je == 0 ? "jemalloc" : "tlbpack";
    fprintf(stderr, "tlbpack compare: the %s trace holds no memory accesses: valgrind did not trace %s "
                    "(see %s/%s.out)\n", label, a->prog[0], r->dir, label);
    return -1;
  }
  cat_file(r->sim_out);
  return 0;
}

/* Keeps the run's files (--keep), leaves the small ones behind after a failure, or removes
 * them all. */
static void compare_clean_up(const char *keep, int failed, const compare_run_t *r) {
  if (keep) {
    fprintf(stderr, "tlbpack compare: traces, regions and program output kept in %s\n", r->dir);
  } else if (failed) {
    unlink(r->je_trace); /* a FIFO, or a trace too large to leave behind unasked */
    unlink(r->tp_trace);
    fprintf(stderr, "tlbpack compare: program output and regions left in %s for a look\n", r->dir);
  } else {
    remove_dir(r->dir);
  }
}

int tpc_cmd_compare(int argc, char **argv) {
  compare_args_t a;
  int rc = compare_parse_args(argc, argv, &a);
  if (rc >= 0) return rc;
  compare_run_t r;
  rc = compare_find_tools(&a, &r);
  if (rc >= 0) return rc;
  rc = compare_make_dir(a.keep, &r);
  if (rc >= 0) return rc;
  int failed = compare_trace_tlbpack(&a, &r) != 0 || compare_simulate(&a, &r) != 0;
  compare_clean_up(a.keep, failed, &r);
  return failed ? TPC_EXIT_FAIL : 0;
}
