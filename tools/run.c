/* tlbpack run: exec a program with libtlbpack.so preloaded and TLBPACK_CONF set. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void run_usage(FILE *out) {
  fprintf(out,
          "usage: tlbpack run [--conf K:V,...] [--stats] [--lib PATH] [--dry-run] [--] PROGRAM [ARGS...]\n"
          "\n"
          "Runs PROGRAM with libtlbpack.so in LD_PRELOAD (ahead of any LD_PRELOAD already set)\n"
          "and TLBPACK_CONF set, so every malloc/free of PROGRAM is served by tlbpack.\n"
          "\n"
          "  -c, --conf K:V,...  allocator options, added after any TLBPACK_CONF already set\n"
          "                      (may be repeated); keys and values (see man 3 tlbpack):\n");
  tpc_conf_keys_help(out, 24, 88);
  fprintf(out,
          "  -s, --stats         print the allocator's stats on stderr at exit (adds stats:1\n"
          "                      unless the conf already sets stats)\n"
          "  -l, --lib PATH      preload this libtlbpack.so instead of the one found beside\n"
          "                      tlbpack (build tree) or in the installed libdir\n"
          "  -n, --dry-run       print the environment and command instead of running it\n"
          "  -h, --help          this text\n"
          "\n"
          "Exit status: PROGRAM's own; 127 when PROGRAM cannot be run; 2 on a usage error.\n"
          "Example: tlbpack run --stats --conf pool:thp -- redis-benchmark -q -n 10000\n");
}

/* Appends "item" to a comma-separated list held in a growing buffer. */
static int conf_append(char **conf, const char *item) {
  size_t old = *conf ? strlen(*conf) : 0;
  size_t add = strlen(item);
  if (add == 0) return 0;
  char *n = realloc(*conf, old + add + 2);
  if (!n) return -1;
  if (old) n[old++] = ',';
  memcpy(n + old, item, add + 1);
  *conf = n;
  return 0;
}

int tpc_cmd_run(int argc, char **argv) {
  static const struct option opts[] = {{"conf", required_argument, 0, 'c'},
                                       {"stats", no_argument, 0, 's'},
                                       {"lib", required_argument, 0, 'l'},
                                       {"dry-run", no_argument, 0, 'n'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  char *conf = NULL;
  const char *lib_arg = NULL;
  int stats = 0, dry = 0, c;
  const char *env_conf = getenv("TLBPACK_CONF");
  if (env_conf && *env_conf && conf_append(&conf, env_conf) != 0) return tpc_fail("run", "out of memory");
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+:c:sl:nh", opts, NULL)) != -1) {
    switch (c) {
    case 'c':
      if (tpc_conf_check("run", optarg) != 0) return free(conf), TPC_EXIT_USAGE;
      if (conf_append(&conf, optarg) != 0) return tpc_fail("run", "out of memory");
      break;
    case 's': stats = 1; break;
    case 'l': lib_arg = optarg; break;
    case 'n': dry = 1; break;
    case 'h': run_usage(stdout); free(conf); return 0;
    case ':':
      free(conf);
      return tpc_usage_error("run", "option '%s' needs a value", argv[optind - 1]);
    default:
      free(conf);
      return tpc_usage_error("run", "unknown option '%s' (accepted: --conf, --stats, --lib, --dry-run, --help)",
                             argv[optind - 1]);
    }
  }
  if (optind >= argc) {
    free(conf);
    return tpc_usage_error("run", "no PROGRAM given (usage: tlbpack run [OPTIONS] -- PROGRAM [ARGS])");
  }
  if (stats && !(conf && tpc_conf_has(conf, "stats")) && conf_append(&conf, "stats:1") != 0)
    return tpc_fail("run", "out of memory");

  char lib[PATH_MAX];
  if (tpc_find_lib("run", lib_arg, lib, sizeof lib) != 0) return free(conf), TPC_EXIT_FAIL;

  /* Ours goes first so that it wins over another malloc already preloaded. */
  const char *old = getenv("LD_PRELOAD");
  size_t need = strlen(lib) + (old ? strlen(old) : 0) + 2;
  char *preload = malloc(need);
  if (!preload) return tpc_fail("run", "out of memory");
  if (old && *old) snprintf(preload, need, "%s:%s", lib, old);
  else snprintf(preload, need, "%s", lib);

  if (setenv("LD_PRELOAD", preload, 1) != 0 || (conf && setenv("TLBPACK_CONF", conf, 1) != 0)) {
    int err = errno;
    free(preload);
    free(conf);
    return tpc_fail("run", "cannot set the environment: %s", strerror(err));
  }
  if (dry) {
    printf("LD_PRELOAD=%s\n", preload);
    printf("TLBPACK_CONF=%s\n", conf ? conf : "");
    for (int i = optind; i < argc; i++) printf("%s%s", argv[i], i + 1 < argc ? " " : "\n");
    free(preload);
    free(conf);
    return 0;
  }
  execvp(argv[optind], argv + optind);
  int err = errno;
  fprintf(stderr, "tlbpack run: cannot run '%s': %s\n", argv[optind], strerror(err));
  free(preload);
  free(conf);
  return 127;
}
