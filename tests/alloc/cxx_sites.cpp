// Under LD_PRELOAD=libtlbpack.so: `new` is grouped by the site that called it. Two functions
// allocate objects of the same size, interleaved; once both have grown out of the shared group
// their objects must never share a 4 KiB page (plain size classes would put them side by side). Each form of new is checked on its own:
// `cxx_sites plain` checks new, new[] and nothrow new; `cxx_sites aligned` new of an
// over-aligned type (operator new(size_t, align_val_t)).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

struct Node { char b[48]; };
struct alignas(64) Wide { char b[64]; };

// noipa: no identical-code folding of the two sites; the asm: no tail jump (see test_placement.c).
#define SITE(name, expr)                                  \
  __attribute__((noipa)) static void *name() {            \
    void *p = expr;                                       \
    __asm__ volatile("" ::: "memory");                    \
    return p;                                             \
  }
SITE(new_a, new Node)
SITE(new_b, new Node)
SITE(arr_a, new char[48])
SITE(arr_b, new char[48])
SITE(nothrow_a, new (std::nothrow) Node)
SITE(nothrow_b, new (std::nothrow) Node)
SITE(aligned_a, new Wide)
SITE(aligned_b, new Wide)

static int check(const char *what, void *(*a)(), void *(*b)(), size_t size) {
  enum { WARM = 4000, N = 4000 };
  /* A new site is young and shares the shared group's slabs until it has shown that it keeps
   * memory (docs/design.md, "Young sites"): both sites grow up first, their blocks kept. */
  for (int i = 0; i < WARM; i++) {
    (void)a();
    (void)b();
  }
  std::vector<uintptr_t> pa, pb;
  for (int i = 0; i < N; i++) {
    uintptr_t x = (uintptr_t)a(), y = (uintptr_t)b();
    pa.push_back(x >> 12);
    pa.push_back((x + size - 1) >> 12);
    pb.push_back(y >> 12);
    pb.push_back((y + size - 1) >> 12);
  }
  std::sort(pa.begin(), pa.end());
  std::sort(pb.begin(), pb.end());
  std::vector<uintptr_t> both;
  std::set_intersection(pa.begin(), pa.end(), pb.begin(), pb.end(), std::back_inserter(both));
  both.erase(std::unique(both.begin(), both.end()), both.end());
  if (!both.empty()) {
    std::printf("cxx_sites: FAIL: %s: objects from two call sites share %zu 4 KiB pages (e.g. 0x%lx000)\n", what,
                both.size(), (unsigned long)both[0]);
    return 1;
  }
  std::printf("cxx_sites: %s: after %d each, %d + %d objects from two call sites on disjoint 4 KiB pages\n", what,
              WARM, N, N);
  return 0;
}

int main(int argc, char **argv) {
  int fails;
  if (argc == 2 && std::strcmp(argv[1], "plain") == 0)
    fails = check("new", new_a, new_b, sizeof(Node)) + check("new[]", arr_a, arr_b, 48) +
            check("nothrow new", nothrow_a, nothrow_b, sizeof(Node));
  else if (argc == 2 && std::strcmp(argv[1], "aligned") == 0)
    fails = check("aligned new", aligned_a, aligned_b, sizeof(Wide));
  else {
    std::fprintf(stderr, "usage: cxx_sites plain|aligned\n");
    return 2;
  }
  if (fails) return 1;
  std::printf("ok\n");
  return 0;
}
