/* tlbsim-gen: writes synthetic traces, for the throughput benchmark and for tests.
 *
 *   tlbsim-gen [-n RECORDS] [-p PAGES] [--pattern mix|random|seq|cyclic] [--format bin|text|lackey]
 *              [--seed N] [--base HEX] [-o FILE]
 *
 * Patterns over a working set of PAGES 4 KiB pages starting at --base:
 *   random  uniform random page, random 8-byte-aligned offset
 *   seq     8-byte steps through the working set, wrapping
 *   cyclic  one access per page, pages in order, wrapping (the LRU worst case)
 *   mix     70% seq, 30% random (default)
 */
#include "tlbsim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x243F6A8885A308D3ull;
static inline uint64_t next(void) {
  rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
  return rng * 0x2545F4914F6CDD1Dull;
}

static int bad(const char *what, const char *v) {
  fprintf(stderr, "tlbsim-gen: %s: '%s'\n", what, v ? v : "");
  return 2;
}

int main(int argc, char **argv) {
  uint64_t n = 1000000, pages = 4096, base = 0x7f0000000000ull;
  const char *pattern = "mix", *fmt = "bin", *outp = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      puts("usage: tlbsim-gen [-n RECORDS] [-p PAGES] [--pattern mix|random|seq|cyclic] "
           "[--format bin|text|lackey] [--seed N] [--base HEX] [-o FILE]");
      return 0;
    }
    if (!v) return bad("option needs a value", a);
    i++;
    errno = 0;
    if (!strcmp(a, "-n")) { n = strtoull(v, &end, 0); if (errno || *end) return bad("-n expects a number", v); }
    else if (!strcmp(a, "-p")) { pages = strtoull(v, &end, 0); if (errno || *end || !pages) return bad("-p expects a positive number", v); }
    else if (!strcmp(a, "--seed")) { rng = strtoull(v, &end, 0) | 1; if (errno || *end) return bad("--seed expects a number", v); }
    else if (!strcmp(a, "--base")) { base = strtoull(v, &end, 16); if (errno || *end) return bad("--base expects hex", v); }
    else if (!strcmp(a, "--pattern")) pattern = v;
    else if (!strcmp(a, "--format")) fmt = v;
    else if (!strcmp(a, "-o")) outp = v;
    else return bad("unknown option", a);
  }
  int pat = !strcmp(pattern, "mix") ? 0 : !strcmp(pattern, "random") ? 1 : !strcmp(pattern, "seq") ? 2
          : !strcmp(pattern, "cyclic") ? 3 : -1;
  if (pat < 0) return bad("--pattern expects mix, random, seq or cyclic", pattern);
  int f = !strcmp(fmt, "bin") ? 0 : !strcmp(fmt, "text") ? 1 : !strcmp(fmt, "lackey") ? 2 : -1;
  if (f < 0) return bad("--format expects bin, text or lackey", fmt);
  FILE *out = outp && strcmp(outp, "-") ? fopen(outp, "wb") : stdout;
  if (!out) return bad(strerror(errno), outp);
  static char buf[1 << 20];
  setvbuf(out, buf, _IOFBF, sizeof buf);
  if (f == 0) ts_bin_write_header(out);
  if (f == 2) fputs("==1== Lackey, an example Valgrind tool\n", out);
  uint64_t span = pages * 4096, seq = 0, cyc = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = next(), off;
    int kind = pat == 0 ? ((r & 1023) < 717 ? 2 : 1) : pat;
    if (kind == 1) off = ((r >> 10) % pages) * 4096 + ((r >> 40) & 0xff8);
    else if (kind == 2) { off = seq; seq += 8; if (seq >= span) seq = 0; }
    else { off = cyc * 4096; if (++cyc == pages) cyc = 0; }
    uint64_t addr = base + off;
    char op = (r >> 60) < 4 ? 'W' : 'R';
    if (f == 0) ts_bin_write(out, addr, 8, op);
    else if (f == 1) fprintf(out, "%c %llx 8\n", op, (unsigned long long)addr);
    else fprintf(out, " %c %08llx,8\n", op == 'W' ? 'S' : 'L', (unsigned long long)addr);
  }
  if (fflush(out) || (out != stdout && fclose(out))) return bad("write failed", strerror(errno));
  return 0;
}
