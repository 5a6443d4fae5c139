/* tlbpack profile: which allocation sites cost TLB misses, and which sites are used together.
 *
 * PROGRAM runs under valgrind lackey (--trace-mem=yes) with libtlbpack-profile.so preloaded:
 * tlbpack's own placement, plus a log of every allocation (alloc/profile.c describes it; one
 * store to a marker word per record lines the log up with the trace). Each access of the trace
 * goes through libtlbsim (the model tlbsim uses); each data access is attributed to the live
 * object that holds it, and the L1 misses, L2 misses (page walks) and walk memory references
 * it caused to that object's allocation site. Sites are named module + offset from the load
 * address (the same in the next run of the same binary), and by function and file:line where
 * addr2line finds debug information. Then it writes a placement plan (tlbpack(1), PLAN FILE)
 * for TLBPACK_CONF=plan:FILE. */
#include "cli.h"
#include "profile.h"
#include "tlbsim.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void profile_usage(FILE *out) {
  fprintf(out,
          "usage: tlbpack profile [--cpu PRESET] [--page-size 4k|2m] [--json] [--top N] [--plan FILE]\n"
          "                       [--keep DIR] [--lib PATH] [--] PROGRAM [ARGS...]\n"
          "       tlbpack profile [OPTIONS] --replay LOG TRACE\n"
          "\n"
          "Runs PROGRAM under valgrind's lackey tool with libtlbpack-profile.so preloaded (tlbpack's\n"
          "placement plus a log of every allocation), simulates the TLBs over every access (the\n"
          "model of tlbsim) and attributes each data access, L1 TLB miss, page walk and walk memory\n"
          "reference to the allocation site of the live object it touched. Prints per site:\n"
          "objects, bytes, accesses, distinct 4 KiB and 2 MiB pages, misses, walks, walk references\n"
          "and mean lifetime (in accesses of the trace); then the pairs of sites most often\n"
          "accessed close together in time. Writes a placement plan for TLBPACK_CONF=plan:FILE.\n"
          "Expect PROGRAM to run about 100-300x slower than alone: use a short run.\n"
          "\n"
          "  --cpu PRESET      TLB preset (default zen4): core2, skylake, goldencove, zen2, zen3, zen4\n"
          "  --page-size P     page size the simulator maps everything with (default 4k)\n"
          "  --json            one JSON object on stdout instead of the tables\n"
          "  --top N           rows of each table (default 15)\n"
          "  --plan FILE       where to write the plan (default tlbpack.plan; '-' for none)\n"
          "  --keep DIR        keep the allocation log and the maps copy in DIR\n"
          "  --lib PATH        the libtlbpack-profile.so to preload (default: beside tlbpack)\n"
          "  --replay LOG TRACE  analyse a kept log and a lackey or text trace instead of running\n"
          "  -h, --help        this text\n"
          "\n"
          "Progress goes to stderr. Example:\n"
          "  tlbpack profile --plan sq.plan -- sqlite3 :memory: < script.sql\n"
          "  tlbpack run --conf plan:sq.plan -- sqlite3 :memory: < script.sql\n");
}

/* ---- running --------------------------------------------------------------------------- */
static int find_profile_lib(const char *explicit_path, char *out, size_t n) {
  if (explicit_path) {
    if (!realpath(explicit_path, out)) return -1;
    return 0;
  }
  const char *dir = tpc_self_dir();
  if (dir) {
    snprintf(out, n, "%s/libtlbpack-profile.so", dir);
    if (access(out, R_OK) == 0) return 0;
#ifdef TP_REL_LIBDIR
    snprintf(out, n, "%s/%s/libtlbpack-profile.so", dir, TP_REL_LIBDIR);
    if (access(out, R_OK) == 0) return 0;
#endif
  }
  return -1;
}

static int resolve_program(const char *prog, char *out, size_t n) {
  if (strchr(prog, '/')) return realpath(prog, out) ? 0 : -1;
  const char *path = getenv("PATH");
  if (!path) path = "/usr/bin:/bin";
  while (*path) {
    size_t l = strcspn(path, ":");
    char cand[PATH_MAX];
    snprintf(cand, sizeof cand, "%.*s/%s", (int)l, path, prog);
    if (access(cand, X_OK) == 0 && realpath(cand, out)) return 0;
    path += l + (path[l] == ':');
  }
  (void)n;
  return -1;
}

/* ---- the command, in steps ------------------------------------------------------------- */
typedef struct profile_args_s {
  const char *cpu, *plan, *keep, *lib;
  int json, replay, ps;
  unsigned top;
  char **prog; /* PROGRAM ARGS, or LOG TRACE under --replay; NULL-terminated */
  int nprog;
} profile_args_t;

/* Where the run's files are and what it started. */
typedef struct profile_io_s {
  char dir[PATH_MAX], log_path[PATH_MAX], maps_path[PATH_MAX + 8], program[PATH_MAX];
  FILE *trace;
  pid_t pid;
} profile_io_t;

/* Parses the options into *a. Returns -1 when the arguments are fine, else the exit status
 * (0 after --help, the usage error's status otherwise). */
static int profile_parse_args(int argc, char **argv, profile_args_t *a) {
  static const struct option opts[] = {{"cpu", required_argument, 0, 'c'},   {"page-size", required_argument, 0, 'p'},
                                       {"json", no_argument, 0, 'j'},        {"top", required_argument, 0, 't'},
                                       {"plan", required_argument, 0, 'P'},  {"keep", required_argument, 0, 'k'},
                                       {"lib", required_argument, 0, 'l'},   {"replay", no_argument, 0, 'r'},
                                       {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
  *a = (profile_args_t){.cpu = "zen4", .plan = "tlbpack.plan", .ps = TS_PS_4K, .top = 15};
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
    switch (c) {
    case 'c': a->cpu = optarg; break;
    case 'p':
      a->ps = ts_page_size_parse(optarg);
      if (a->ps != TS_PS_4K && a->ps != TS_PS_2M) return tpc_usage_error("profile", "--page-size '%s': expected 4k or 2m", optarg);
      break;
    case 'j': a->json = 1; break;
    case 't': {
      char *e;
      long v = strtol(optarg, &e, 10);
      if (*e || v < 1 || v > 100000) return tpc_usage_error("profile", "--top '%s': expected a number 1-100000", optarg);
      a->top = (unsigned)v;
      break;
    }
    case 'P': a->plan = optarg; break;
    case 'k': a->keep = optarg; break;
    case 'l': a->lib = optarg; break;
    case 'r': a->replay = 1; break;
    case 'h': profile_usage(stdout); return 0;
    case ':': return tpc_usage_error("profile", "option '%s' needs a value", argv[optind - 1]);
    default:
      return tpc_usage_error("profile", "unknown option '%s' (accepted: --cpu, --page-size, --json, --top, --plan, "
                             "--keep, --lib, --replay, --help)", argv[optind - 1]);
    }
  }
  if (optind >= argc)
    return tpc_usage_error("profile", a->replay ? "--replay needs LOG and TRACE" : "no PROGRAM given (usage: tlbpack profile [OPTIONS] -- PROGRAM [ARGS])");
  if (a->replay && argc - optind != 2) return tpc_usage_error("profile", "--replay needs LOG and TRACE, nothing else");
  a->prog = argv + optind;
  a->nprog = argc - optind;
  return -1;
}

/* The child: PROGRAM under valgrind lackey with the profiling library preloaded and the log's
 * path added to TLBPACK_CONF; the trace goes to log_fd. Never returns. */
static void profile_exec_valgrind(const profile_args_t *a, const char *lib, const char *log_path, int log_fd) {
  char logfd[32];
  snprintf(logfd, sizeof logfd, "--log-fd=%d", log_fd);
  const char *old = getenv("TLBPACK_CONF");
  char *conf = malloc(strlen(log_path) + (old ? strlen(old) : 0) + 16);
  sprintf(conf, "%s%sprofile:%s", old && *old ? old : "", old && *old ? "," : "", log_path);
  setenv("TLBPACK_CONF", conf, 1);
  setenv("LD_PRELOAD", lib, 1); /* valgrind's launcher loads it too, and logs nothing */
  char **av = calloc((size_t)(a->nprog + 8), sizeof *av);
  int k = 0;
  av[k++] = "valgrind";
  av[k++] = "--tool=lackey";
  av[k++] = "--trace-mem=yes";
  av[k++] = logfd;
  for (int i = 0; i < a->nprog; i++) av[k++] = a->prog[i];
  execvp("valgrind", av);
  fprintf(stderr, "tlbpack profile: cannot run valgrind: %s (install it: apt-get install valgrind)\n", strerror(errno));
  _exit(127);
}

/* Opens the trace: the kept one under --replay, else a pipe from PROGRAM started under
 * valgrind, with the log in --keep DIR or a temporary directory. Returns -1 when started,
 * else the exit status (the message printed). */
static int profile_open_trace(const profile_args_t *a, profile_io_t *io) {
  if (a->replay) {
    snprintf(io->log_path, sizeof io->log_path, "%s", a->prog[0]);
    io->trace = strcmp(a->prog[1], "-") ? fopen(a->prog[1], "r") : stdin;
    if (!io->trace) return tpc_fail("profile", "cannot open the trace %s: %s", a->prog[1], strerror(errno));
    return -1;
  }
  char lib[PATH_MAX];
  if (find_profile_lib(a->lib, lib, sizeof lib) != 0)
    return tpc_fail("profile", "libtlbpack-profile.so not found%s%s (build it: make build)", a->lib ? ": " : "",
                    a->lib ? a->lib : "");
  if (resolve_program(a->prog[0], io->program, sizeof io->program) != 0)
    return tpc_fail("profile", "cannot find the program '%s'", a->prog[0]);
  if (a->keep) {
    if (mkdir(a->keep, 0755) != 0 && errno != EEXIST) return tpc_fail("profile", "cannot create %s: %s", a->keep, strerror(errno));
    snprintf(io->dir, sizeof io->dir, "%s", a->keep);
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(io->dir, sizeof io->dir, "%s/tlbpack-profile.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(io->dir)) return tpc_fail("profile", "cannot create a temporary directory: %s", strerror(errno));
  }
  snprintf(io->log_path, sizeof io->log_path, "%s/alloc.log", io->dir);
  unlink(io->log_path);
  int fds[2];
  if (pipe(fds) != 0) return tpc_fail("profile", "pipe: %s", strerror(errno));
  fflush(stdout);
  fflush(stderr);
  io->pid = fork();
  if (io->pid == 0) {
    close(fds[0]);
    profile_exec_valgrind(a, lib, io->log_path, fds[1]);
  }
  close(fds[1]);
  if (io->pid < 0) return tpc_fail("profile", "fork: %s", strerror(errno));
  io->trace = fdopen(fds[0], "r");
  fprintf(stderr, "tlbpack profile: tracing %s under valgrind lackey (about 100-300x slower than alone)\n", io->program);
  return -1;
}

/* Feeds every trace line through the simulator and the log, opening the log at its first
 * marker store; then waits for PROGRAM and warns about what went wrong. */
static void profile_read_trace(const profile_args_t *a, profile_io_t *io, run_t *r) {
  tpp_map_init(&tpp_site_of_ra, 1024);
  tpp_map_init(&tpp_obj_of_start, 1 << 16);
  tpp_map_init(&tpp_page_head, 1 << 16);
  tpp_map_init(&tpp_pages_seen, 1 << 16);
  tpp_map_init(&tpp_pairs, 1024);
  char line[4096];
  int log_ok = 1;
  while (fgets(line, sizeof line, io->trace)) {
    /* The log exists before the first marker store (an 8-byte store): look for it there. */
    if (r->log == NULL && r->marker == 0 && (a->replay || (line[0] == ' ' && line[1] == 'S' && strstr(line, ",8")))) {
      r->log = fopen(io->log_path, "rb");
      if (r->log) {
        uint64_t head[2];
        if (fread(head, sizeof head, 1, r->log) != 1 || memcmp(head, "TPPROF1", 8) != 0) {
          fclose(r->log);
          r->log = NULL; /* not written yet: try again at the next line */
        } else {
          r->marker = head[1];
        }
      }
    }
    if (tpp_trace_line(r, line) != 0) log_ok = 0;
  }
  if (io->trace != stdin) fclose(io->trace);
  fprintf(stderr, "tlbpack profile: %llu accesses, %llu allocation events\n", (unsigned long long)r->lines,
          (unsigned long long)r->events);
  int status = 0;
  if (io->pid > 0) waitpid(io->pid, &status, 0);
  if (!r->log) fprintf(stderr, "tlbpack profile: warning: no allocation log (%s): nothing to attribute\n", io->log_path);
  if (!log_ok) fprintf(stderr, "tlbpack profile: warning: the trace has more markers than the log has records\n");
  if (io->pid > 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
    fprintf(stderr, "tlbpack profile: warning: %s exited with status %d under valgrind\n", io->program,
            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

/* Closes the lifetimes still open, names the sites (the top ones by misses, and every site the
 * plan will name) and sorts them into hot, cold and the rest. */
static void profile_attribute_sites(unsigned top, profile_io_t *io, const ts_stats_t *st) {
  /* Objects still live at the end: their lifetime runs to the end of the trace. */
  for (size_t i = 0; i < tpp_nobjs; i++)
    if (tpp_objs[i].alive) tpp_sites[tpp_objs[i].site].life_sum += tpp_now - tpp_objs[i].birth;
  snprintf(io->maps_path, sizeof io->maps_path, "%s.maps", io->log_path);
  tpp_load_maps(io->maps_path);
  tpp_name_sites();
  tpp_order = tpp_xcalloc(tpp_nsites, sizeof *tpp_order);
  for (size_t i = 0; i < tpp_nsites; i++) tpp_order[i] = i;
  qsort(tpp_order, tpp_nsites, sizeof *tpp_order, tpp_by_misses);
  for (size_t k = 0; k < tpp_nsites && k < top; k++) tpp_symbolize(&tpp_sites[tpp_order[k]]);
  uint64_t attributed_l1 = st->l1_misses - tpp_una_l1;
  tpp_classify(attributed_l1, tpp_total_data - tpp_unattributed);
  for (size_t k = 0; k < tpp_nsites; k++)
    if (tpp_kind[k] != K_REST) tpp_symbolize(&tpp_sites[k]);
}

/* Writes the plan (unless --plan -) for the traced program; under --replay the program is the
 * first module mapped at file offset 0 that is not a shared library. Returns the plan's path,
 * or NULL when none was written. */
static const char *profile_write_plan(const char *plan, char *program, size_t n, unsigned *nhot, unsigned *ncold) {
  if (strcmp(plan, "-") == 0) return NULL;
  if (!program[0]) {
    for (size_t i = 0; i < tpp_nmaps && !program[0]; i++)
      if (tpp_maps[i].off == 0 && strstr(tpp_maps[i].path, ".so") == NULL) snprintf(program, n, "%s", tpp_maps[i].path);
    if (!program[0]) snprintf(program, n, "/unknown");
  }
  if (tpp_write_plan(plan, program, nhot, ncold) != 0) {
    fprintf(stderr, "tlbpack profile: cannot write the plan %s: %s\n", plan, strerror(errno));
    return NULL;
  }
  return plan;
}

int tpc_cmd_profile(int argc, char **argv) {
  profile_args_t a;
  int rc = profile_parse_args(argc, argv, &a);
  if (rc >= 0) return rc;

  ts_config_t cfg;
  if (ts_config_preset(&cfg, a.cpu) != 0) return tpc_usage_error("profile", "--cpu '%s': expected core2, skylake, goldencove, zen2, zen3, zen4 or custom", a.cpu);
  cfg.page_size = a.ps;
  char err[512];
  run_t r = {0};
  r.sim = ts_sim_new(&cfg, err, sizeof err);
  if (!r.sim) return tpc_fail("profile", "%s", err);
  r.st = ts_sim_stats(r.sim);

  profile_io_t io = {.pid = -1};
  rc = profile_open_trace(&a, &io);
  if (rc >= 0) return rc;
  profile_read_trace(&a, &io, &r);

  const ts_stats_t *st = ts_sim_stats(r.sim);
  profile_attribute_sites(a.top, &io, st);
  unsigned nhot = 0, ncold = 0;
  const char *plan_written = profile_write_plan(a.plan, io.program, sizeof io.program, &nhot, &ncold);
  tpp_report(stdout, a.json, a.top, st, plan_written, nhot, ncold);

  if (r.log) fclose(r.log);
  ts_sim_free(r.sim);
  if (!a.replay && !a.keep) {
    unlink(io.log_path);
    unlink(io.maps_path);
    rmdir(io.dir);
  }
  return r.log ? 0 : TPC_EXIT_FAIL;
}
