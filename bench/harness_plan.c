/* The `tlbpack-plan` rows: a workload run under a placement plan that `tlbpack profile` made
 * from a smaller run of the same workload binary (fewer records, another seed), applied with
 * TLBPACK_CONF=plan:FILE and no code change. Profiling runs under valgrind and takes seconds,
 * so the plan is kept beside the workload binary with a key file, and made again only when the
 * workload binary, the profiler (tlbpack and libtlbpack-profile.so) or the profiling flags
 * change. */
#define _GNU_SOURCE
#include "harness.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* FNV-1a over a file's bytes, folded into h; 0 when the file cannot be read. */
static uint64_t hash_file(const char *path, uint64_t h) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  unsigned char buf[65536];
  ssize_t r;
  while ((r = read(fd, buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i < r; i++) h = (h ^ buf[i]) * 0x100000001b3ull;
  close(fd);
  return r < 0 ? 0 : h;
}

static uint64_t hash_str(const char *s, uint64_t h) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

int tb_plan_path(const tb_workload_t *w, const char *wl_dir, char *path, size_t n) {
  return snprintf(path, n, "%s/%s.plan", wl_dir, w->name) < (int)n ? 0 : -1;
}

int tb_plan_make(const tb_workload_t *w, const char *self_dir, const char *wl_dir, double timeout_s,
                 char *path, size_t n, char *note, size_t nn) {
  char prog[4400], cli[4400], lib[4400], key_path[4600], tmp[4600];
  snprintf(prog, sizeof prog, "%s/%s", wl_dir, w->prog);
  snprintf(cli, sizeof cli, "%s/tlbpack", self_dir);
  snprintf(lib, sizeof lib, "%s/libtlbpack-profile.so", self_dir);
  if (!w->plan_args) return snprintf(note, nn, "no profiling run is defined for %s", w->name), -1;
  if (access(cli, X_OK) != 0 || access(lib, R_OK) != 0)
    return snprintf(note, nn, "tlbpack or libtlbpack-profile.so is not built (next to tlbbench)"), -1;
  if (tb_plan_path(w, wl_dir, path, n) != 0) return snprintf(note, nn, "path too long"), -1;
  uint64_t key = 0xcbf29ce484222325ull;
  key = hash_file(prog, key);
  if (key) key = hash_file(cli, key);
  if (key) key = hash_file(lib, key);
  if (!key) return snprintf(note, nn, "cannot read %s, tlbpack or libtlbpack-profile.so", prog), -1;
  key = hash_str(w->plan_args, key);
  key = hash_str(prog, key); /* a plan names its program's path: a copy elsewhere ignores it */
  char want[64], have[64] = "";
  snprintf(want, sizeof want, "%016llx\n", (unsigned long long)key);
  snprintf(key_path, sizeof key_path, "%s.key", path);
  FILE *kf = fopen(key_path, "r");
  if (kf) {
    if (!fgets(have, sizeof have, kf)) have[0] = 0;
    fclose(kf);
  }
  if (!strcmp(want, have) && access(path, R_OK) == 0) {
    snprintf(note, nn, "plan %s (cached; made by tlbpack profile -- %s %s)", path, w->prog, w->plan_args);
    return 0;
  }
  unlink(key_path);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  char *argv[40], store[2048];
  int k = 0;
  argv[k++] = cli;
  argv[k++] = "profile";
  argv[k++] = "--plan";
  argv[k++] = tmp;
  argv[k++] = "--";
  argv[k++] = prog;
  snprintf(store, sizeof store, "%s", w->plan_args);
  for (char *save, *t = strtok_r(store, " ", &save); t && k < 38; t = strtok_r(NULL, " ", &save)) argv[k++] = t;
  argv[k] = NULL;
  tb_proc_t p;
  if (tb_run(argv, NULL, timeout_s, &p) != 0) return snprintf(note, nn, "cannot run %s", cli), -1;
  int bad = p.timed_out || p.status != 0 || access(tmp, R_OK) != 0;
  if (bad) {
    const char *e = p.err;
    const char *last = e;
    for (const char *q = e; *q; q++)
      if (*q == '\n' && q[1]) last = q + 1;
    snprintf(note, nn, "tlbpack profile %s (exit %d): %.*s", p.timed_out ? "timed out" : "failed", p.status,
             (int)strcspn(last, "\n"), last);
    tb_proc_free(&p);
    unlink(tmp);
    return -1;
  }
  double secs = p.wall_s;
  tb_proc_free(&p);
  if (rename(tmp, path) != 0) return snprintf(note, nn, "cannot write %s", path), -1;
  kf = fopen(key_path, "w");
  if (kf) {
    fputs(want, kf);
    fclose(kf);
  }
  snprintf(note, nn, "plan %s (made in %.0f s by tlbpack profile -- %s %s)", path, secs, w->prog, w->plan_args);
  return 0;
}
