/* tlbpack compare: trace one program under valgrind lackey twice, with jemalloc and with
 * tlbpack preloaded, and let tlbsim compare the two traces side by side. */
#include "cli.h"

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
          "Runs PROGRAM twice under valgrind's lackey tool (--trace-mem=yes), first with jemalloc\n"
          "preloaded, then with tlbpack preloaded (TLBPACK_CONF=regions:FILE records which of its\n"
          "ranges are huge pages), and prints tlbsim's side-by-side comparison of the two traces:\n"
          "TLB entries needed, misses, page walks and walk levels saved. jemalloc's memory is\n"
          "simulated on 4 KiB pages (it does not ask for huge pages by default).\n"
          "Lackey runs programs about 100x slower and its traces take ~20 bytes per access: use\n"
          "a short run of PROGRAM.\n"
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

/* Runs argv with LD_PRELOAD/TLBPACK_CONF set as given, stdout+stderr to out_path.
 * Returns the exit status (or 128+signal), -1 if it could not start. */
static int run_logged(char *const argv[], const char *preload, const char *conf, const char *out_path) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
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
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int trace_one(const char *label, char **prog, const char *dir, const char *preload, const char *conf,
                     char *trace_out) {
  char log_opt[PATH_MAX + 16], out_path[PATH_MAX];
  snprintf(trace_out, PATH_MAX, "%s/%s.trace", dir, label);
  snprintf(log_opt, sizeof log_opt, "--log-file=%s", trace_out);
  snprintf(out_path, sizeof out_path, "%s/%s.out", dir, label);
  int n = 0;
  while (prog[n]) n++;
  char **argv = calloc((size_t)n + 5, sizeof *argv);
  if (!argv) return -1;
  argv[0] = "valgrind";
  argv[1] = "--tool=lackey";
  argv[2] = "--trace-mem=yes";
  argv[3] = log_opt;
  for (int i = 0; i < n; i++) argv[4 + i] = prog[i];
  fprintf(stderr, "tlbpack compare: tracing %s with %s (valgrind lackey)...\n", prog[0], label);
  int st = run_logged(argv, preload, conf, out_path);
  free(argv);
  if (st == 127 || st < 0) {
    fprintf(stderr, "tlbpack compare: could not run valgrind on %s (see %s)\n", prog[0], out_path);
    return -1;
  }
  struct stat sb;
  if (stat(trace_out, &sb) != 0 || sb.st_size == 0) {
    fprintf(stderr, "tlbpack compare: valgrind wrote no trace for the %s run (see %s)\n", label, out_path);
    return -1;
  }
  if (st != 0)
    fprintf(stderr, "tlbpack compare: note: %s exited with status %d under %s (its output: %s)\n", prog[0], st,
            label, out_path);
  return 0;
}

static void remove_dir(const char *dir) {
  static const char *const files[] = {"jemalloc.trace", "jemalloc.out", "tlbpack.trace", "tlbpack.out",
                                      "tlbpack.regions", NULL};
  char p[PATH_MAX];
  for (int i = 0; files[i]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
}

int tpc_cmd_compare(int argc, char **argv) {
  static const struct option opts[] = {{"cpu", required_argument, 0, 'c'},     {"json", no_argument, 0, 'j'},
                                       {"keep", required_argument, 0, 'k'},    {"lib", required_argument, 0, 'l'},
                                       {"jemalloc", required_argument, 0, 'J'}, {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *cpu = NULL, *keep = NULL, *lib_arg = NULL, *je_arg = NULL;
  int json = 0, c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+:c:jk:l:h", opts, NULL)) != -1) {
    switch (c) {
    case 'c': cpu = optarg; break;
    case 'j': json = 1; break;
    case 'k': keep = optarg; break;
    case 'l': lib_arg = optarg; break;
    case 'J': je_arg = optarg; break;
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
  if (cpu) {
    static const char *const presets[] = {"core2", "skylake", "goldencove", "zen2", "zen3", "zen4", "custom", NULL};
    int ok = 0;
    for (int i = 0; presets[i]; i++) ok |= !strcmp(cpu, presets[i]);
    if (!ok)
      return tpc_usage_error("compare", "--cpu '%s' is not a preset (accepted: core2, skylake, goldencove, zen2, "
                                        "zen3, zen4, custom)", cpu);
  }

  char tlbsim[PATH_MAX], valgrind[PATH_MAX], lib[PATH_MAX], je[PATH_MAX];
  if (tpc_find_tool("tlbsim", tlbsim, sizeof tlbsim) != 0)
    return tpc_fail("compare", "tlbsim not found (looked beside tlbpack, in the installed bindir and on PATH); "
                               "build it with make");
  if (tpc_find_tool("valgrind", valgrind, sizeof valgrind) != 0)
    return tpc_fail("compare", "valgrind not found on PATH; install it (apt-get install valgrind)");
  if (tpc_find_lib("compare", lib_arg, lib, sizeof lib) != 0) return TPC_EXIT_FAIL;
  je[0] = 0;
  if (je_arg) {
    if (access(je_arg, R_OK) != 0)
      return tpc_fail("compare", "--jemalloc %s: %s (expected the path of libjemalloc.so)", je_arg, strerror(errno));
    snprintf(je, sizeof je, "%s", je_arg);
  } else {
    for (int i = 0; jemalloc_candidates[i] && !je[0]; i++)
      if (access(jemalloc_candidates[i], R_OK) == 0) snprintf(je, sizeof je, "%s", jemalloc_candidates[i]);
    if (!je[0])
      return tpc_fail("compare", "libjemalloc.so.2 not found (apt-get install libjemalloc2, or pass --jemalloc PATH)");
  }

  char dir[PATH_MAX];
  if (keep) {
    if (mkdir(keep, 0755) != 0 && errno != EEXIST) return tpc_fail("compare", "--keep %s: %s", keep, strerror(errno));
    snprintf(dir, sizeof dir, "%s", keep);
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tlbpack-compare-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return tpc_fail("compare", "cannot create a directory in %s: %s", dir, strerror(errno));
  }

  char je_trace[PATH_MAX], tp_trace[PATH_MAX], regions[PATH_MAX], conf[PATH_MAX + 16];
  snprintf(regions, sizeof regions, "%s/tlbpack.regions", dir);
  snprintf(conf, sizeof conf, "regions:%s", regions);
  int rc = TPC_EXIT_FAIL;
  if (trace_one("jemalloc", argv + optind, dir, je, NULL, je_trace) != 0) goto out;
  if (trace_one("tlbpack", argv + optind, dir, lib, conf, tp_trace) != 0) goto out;
  if (access(regions, R_OK) != 0) {
    fprintf(stderr, "tlbpack compare: the tlbpack run wrote no regions file (%s): was %s really preloaded?\n",
            regions, lib);
    goto out;
  }

  /* tlbsim [--cpu X] [--json] --compare A [options for A] B [options for B] (tlbsim(1)):
   * jemalloc's trace on the default 4 KiB pages, tlbpack's with its regions file. */
  char *sim_argv[16];
  int n = 0;
  sim_argv[n++] = tlbsim;
  if (cpu) sim_argv[n++] = "--cpu", sim_argv[n++] = (char *)cpu;
  if (json) sim_argv[n++] = "--json";
  sim_argv[n++] = "--compare";
  sim_argv[n++] = je_trace;
  sim_argv[n++] = "--label";
  sim_argv[n++] = "jemalloc";
  sim_argv[n++] = tp_trace;
  sim_argv[n++] = "--label";
  sim_argv[n++] = "tlbpack";
  sim_argv[n++] = "--regions";
  sim_argv[n++] = regions;
  sim_argv[n] = NULL;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    rc = tpc_fail("compare", "fork: %s", strerror(errno));
    goto out;
  }
  if (pid == 0) {
    execv(tlbsim, sim_argv);
    fprintf(stderr, "tlbpack compare: cannot run %s: %s\n", tlbsim, strerror(errno));
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  rc = WIFEXITED(st) ? WEXITSTATUS(st) : TPC_EXIT_FAIL;
  if (rc != 0) {
    fprintf(stderr, "tlbpack compare: %s --compare failed (status %d)%s\n", tlbsim, rc,
            keep ? "" : "; rerun with --keep DIR to look at the traces");
    rc = TPC_EXIT_FAIL;
  }
out:
  if (keep) fprintf(stderr, "tlbpack compare: traces, regions and program output kept in %s\n", dir);
  else remove_dir(dir);
  return rc;
}
