/* tlbpack: the command people type. Dispatches to one verb per file (run.c, pool.c, compare.c,
 * profile.c). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#ifndef TP_VERSION
#define TP_VERSION "unknown"
#endif

static void usage(FILE *out) {
  fprintf(out,
          "usage: tlbpack VERB [OPTIONS] ...\n"
          "\n"
          "A hugepage-aware malloc that packs co-used objects onto few huge pages.\n"
          "\n"
          "verbs:\n"
          "  run [--conf K:V,...] [--stats] [--lib PATH] -- PROGRAM [ARGS]\n"
          "        run PROGRAM with libtlbpack.so preloaded and TLBPACK_CONF set\n"
          "  pool status | reserve SIZE | release [--keep N]\n"
          "        show, reserve (root) or release (root) the hugetlbfs huge page pool\n"
          "  compare [--cpu PRESET] -- PROGRAM [ARGS]\n"
          "        trace PROGRAM under valgrind lackey with jemalloc and with tlbpack and\n"
          "        print tlbsim's side-by-side TLB comparison\n"
          "  profile [--cpu PRESET] [--json] [--plan FILE] -- PROGRAM [ARGS]\n"
          "        trace PROGRAM under valgrind lackey with tlbpack and an allocation log: TLB\n"
          "        misses per allocation site, sites used together, and a placement plan\n"
          "        for TLBPACK_CONF=plan:FILE\n"
          "  help [VERB]   this text, or a verb's own --help\n"
          "\n"
          "options:\n"
          "  -h, --help     this text (every verb has its own: tlbpack VERB --help)\n"
          "  -V, --version  print the version\n"
          "\n"
          "exit status: 0 ok, 1 failure, 2 usage error, 3 pool reserve got fewer pages than asked;\n"
          "`run` exits with PROGRAM's status. See tlbpack(1), tlbpack(3).\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return TPC_EXIT_USAGE;
  }
  const char *verb = argv[1];
  if (!strcmp(verb, "-h") || !strcmp(verb, "--help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(verb, "-V") || !strcmp(verb, "--version") || !strcmp(verb, "version")) {
    printf("tlbpack %s\n", TP_VERSION);
    return 0;
  }
  if (!strcmp(verb, "help")) {
    if (argc < 3) {
      usage(stdout);
      return 0;
    }
    char *sub[] = {argv[2], "--help", NULL};
    if (!strcmp(argv[2], "run")) return tpc_cmd_run(2, sub);
    if (!strcmp(argv[2], "pool")) return tpc_cmd_pool(2, sub);
    if (!strcmp(argv[2], "compare")) return tpc_cmd_compare(2, sub);
    if (!strcmp(argv[2], "profile")) return tpc_cmd_profile(2, sub);
    return tpc_usage_error("help", "unknown verb '%s' (accepted: run, pool, compare, profile)", argv[2]);
  }
  if (!strcmp(verb, "run")) return tpc_cmd_run(argc - 1, argv + 1);
  if (!strcmp(verb, "pool")) return tpc_cmd_pool(argc - 1, argv + 1);
  if (!strcmp(verb, "compare")) return tpc_cmd_compare(argc - 1, argv + 1);
  if (!strcmp(verb, "profile")) return tpc_cmd_profile(argc - 1, argv + 1);
  fprintf(stderr, "tlbpack: unknown verb '%s' (accepted: run, pool, compare, profile, help)\n", verb);
  fprintf(stderr, "Try 'tlbpack --help'.\n");
  return TPC_EXIT_USAGE;
}
