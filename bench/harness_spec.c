/* The benchmark matrix: which allocators (with the exact library and environment each run
 * gets) and which workloads (with their sizes per scale). */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LIBDIR "/usr/lib/x86_64-linux-gnu/"

static const char *lib_jemalloc = LIBDIR "libjemalloc.so.2";
static const char *lib_tcmalloc = LIBDIR "libtcmalloc_minimal.so.4";
static const char *lib_mimalloc = LIBDIR "libmimalloc.so.2";

/* Paths can be overridden (--lib NAME=PATH); the table points at these slots. */
static const char *over_name[8];
static const char *over_path[8];
static int n_over;

const tb_alloc_t tb_allocs[] = {
  {"glibc", TB_LIB_NONE, NULL, {NULL}, NULL, "libc.so.6", "glibc malloc, defaults", 0, 0},
  {"glibc-thp", TB_LIB_NONE, NULL, {"GLIBC_TUNABLES=glibc.malloc.hugetlb=1", NULL}, NULL, "libc.so.6",
   "glibc with glibc.malloc.hugetlb=1 (madvise THP on its heap)", 0, 0},
  {"glibc-hugetlb", TB_LIB_NONE, NULL, {"GLIBC_TUNABLES=glibc.malloc.hugetlb=2", NULL}, NULL, "libc.so.6",
   "glibc with glibc.malloc.hugetlb=2 (MAP_HUGETLB from the hugetlbfs pool)", 0, 0},
  {"jemalloc", TB_LIB_PATH, NULL, {NULL}, NULL, "libjemalloc.so.2", "jemalloc 5 (Debian libjemalloc2), defaults", 0, 0},
  {"jemalloc-thp", TB_LIB_PATH, NULL, {"MALLOC_CONF=thp:always,metadata_thp:always", NULL}, NULL,
   "libjemalloc.so.2", "jemalloc with MALLOC_CONF=thp:always,metadata_thp:always", 0, 0},
  {"tcmalloc", TB_LIB_PATH, NULL, {NULL}, NULL, "libtcmalloc_minimal.so.4", "gperftools tcmalloc (minimal)", 0, 0},
  {"mimalloc", TB_LIB_PATH, NULL, {NULL}, NULL, "libmimalloc.so.2", "mimalloc 2, defaults", 0, 0},
  {"mimalloc-large", TB_LIB_PATH, NULL, {"MIMALLOC_LARGE_OS_PAGES=1", NULL}, NULL, "libmimalloc.so.2",
   "mimalloc with MIMALLOC_LARGE_OS_PAGES=1", 0, 0},
  {"tlbpack", TB_LIB_TLBPACK, NULL, {"TLBPACK_CONF=pool:auto,group:site", NULL}, NULL, "libtlbpack.so",
   "tlbpack, pool:auto, group:site (the default)", 0, 0},
  {"tlbpack-thread", TB_LIB_TLBPACK, NULL, {"TLBPACK_CONF=pool:auto,group:thread", NULL}, NULL,
   "libtlbpack.so", "tlbpack, group:thread", 0, 0},
  {"tlbpack-none", TB_LIB_TLBPACK, NULL, {"TLBPACK_CONF=pool:auto,group:none", NULL}, NULL,
   "libtlbpack.so", "tlbpack, group:none (size classes only)", 0, 0},
  {"tlbpack-hugetlbfs", TB_LIB_TLBPACK, NULL, {"TLBPACK_CONF=pool:hugetlbfs,group:site", NULL}, NULL,
   "libtlbpack.so", "tlbpack, pool:hugetlbfs only", 0, 0},
  {"tlbpack-thp", TB_LIB_TLBPACK, NULL, {"TLBPACK_CONF=pool:thp,group:site", NULL}, NULL,
   "libtlbpack.so", "tlbpack, pool:thp only", 0, 0},
  {"tlbpack-4k", TB_LIB_TLBPACK, NULL, {"TLBPACK_CONF=pool:4k,group:site", NULL}, NULL,
   "libtlbpack.so", "tlbpack, pool:4k (placement without huge pages)", 0, 0},
  {"tlbpack-arena", TB_LIB_TLBPACK, NULL, {"TLBPACK_CONF=pool:auto,group:site", NULL}, "--arena", "libtlbpack.so",
   "tlbpack, hot records in an ordered group (tp_group_create_arena), as a database linking it would", 0, 0},
  {"tlbpack-plan", TB_LIB_TLBPACK, NULL, {"TLBPACK_CONF=pool:auto,group:site", NULL}, NULL, "libtlbpack.so",
   "tlbpack with plan:FILE, the plan made by `tlbpack profile` of a smaller run (records: 500 records, "
   "seed 7), no code change", 1, 0},
  {"ideal", TB_LIB_NONE, NULL, {NULL}, "--ideal", NULL,
   "hot objects bump-allocated from one MAP_HUGETLB region (THP if no pool): the layout limit", 0, 0},
  {"tlbpack-1g", TB_LIB_TLBPACK, NULL, {"TLBPACK_CONF=pool:auto,group:site,gpage_mb:0", NULL}, NULL,
   "libtlbpack.so", "tlbpack with gpage_mb:0: the heap on 1 GiB pages while the 1 GiB pool has free ones", 0, 1},
  {"tlbpack-2m", TB_LIB_TLBPACK, NULL, {"TLBPACK_CONF=pool:auto,group:site,gpages:off", NULL}, NULL,
   "libtlbpack.so", "tlbpack with gpages:off: 2 MiB pages only", 0, 1},
  {"tlbpack-sqlite", TB_LIB_NONE, NULL, {NULL}, "--adapter auto", "libc.so.6",
   "no preload: SQLite's heap and page cache on tlbpack through its own hooks (libtlbpack-sqlite, "
   "tp_sqlite_install), the program's malloc glibc's", 0, 1},
};
const size_t tb_nallocs = sizeof tb_allocs / sizeof tb_allocs[0];

/* Sizes: demo keeps the whole `make demo` under 3 minutes on 2 cores. records' hot set (~4.6 MB)
 * stays in cache even on this shared host, where lookups slow down from ~4 MB of hot data on
 * (the nominal L3 is 32 MiB; neighbours use it), yet needs more 4 KiB pages under jemalloc than
 * the 3072-entry L2 TLB holds: 8 cold buffers per record dilute the size-class slabs. */
/* a workload of our own (no foreign program): traced, nothing to install, no stock malloc */
#define TB_NATIVE NULL, NULL, NULL, 0, NULL, NULL, NULL, {0}
/* ... that a plan is made for (tlbpack-plan): the flags of the smaller run it profiles */
#define TB_NATIVE_PLANNED(args) NULL, NULL, NULL, 0, NULL, args, NULL, {0}
const tb_workload_t tb_workloads[] = {
  {"records", "wl_records",
   {"--records 400 --lookups 20000", "--records 18000 --cold 8 --lookups 1000000",
    "--records 18000 --cold 8 --lookups 3000000"}, 1, 1,
   "co-used node+key+value records among cold and short-lived objects, dependent lookups; hot set ~4.6 MB (in cache), >3072 4 KiB pages under jemalloc",
   TB_NATIVE_PLANNED("--records 500 --cold 8 --lookups 5000 --seed 7")},
  {"records-big", "wl_records",
   {"--records 800 --lookups 20000", "--records 400000 --lookups 1000000",
    "--records 400000 --lookups 2000000"}, 1, 0,
   "the same, hot set ~100 MB (larger than the L3), 2 cold buffers per record", TB_NATIVE},
  {"index", "wl_index",
   {"--keys 500 --ops 2000", "--keys 100000 --ops 150000", "--keys 200000 --ops 400000"}, 0, 1,
   "red-black tree with separate values: lookups, inserts, deletes, range scans", TB_NATIVE},
  {"chase", "wl_chase",
   {"--nodes 500 --steps 20000", "--nodes 100000 --steps 1000000", "--nodes 200000 --steps 3000000"}, 0, 1,
   "pointer chasing through a list linked in random order", TB_NATIVE},
  {"chase-warm", "wl_chase",
   {"--nodes 500 --steps 20000 --warm 8", "--nodes 100000 --steps 1000000 --warm 8",
    "--nodes 200000 --steps 3000000 --warm 8"}, 0, 1,
   "the same list with a jump pointer per node, warming the node 8 steps ahead (tp_warm when exported, else prefetch): overlaps cache and TLB misses alike", TB_NATIVE},
  {"lru", "wl_lru",
   {"--capacity 200 --ops 5000", "--capacity 50000 --ops 300000", "--capacity 100000 --ops 1000000"}, 0, 0,
   "LRU cache (hash + list) under churn, skewed keys", TB_NATIVE},
  {"strings", "wl_strings",
   {"--lines 2000", "--lines 100000", "--lines 400000"}, 0, 0,
   "log parsing: interned names, strdup'd values, growing arrays", TB_NATIVE},
  {"sqlite", "wl_sqlite",
   {"--rows 100 --trace-rows 20", "--rows 20000 --trace-rows 150", "--rows 100000 --trace-rows 200"}, 0, 0,
   "sqlite3 running a script (in-memory table + index); traced with valgrind lackey", TB_NATIVE},
  {"malloc-st", "wl_malloc",
   {"--ops 20000 --live 1000", "--ops 2000000", "--ops 10000000"}, 0, 0,
   "malloc/free throughput: one thread, 16-512 B, random free order", TB_NATIVE},
  {"malloc-mt", "wl_malloc",
   {"--ops 20000 --threads 2", "--ops 2000000 --threads 2", "--ops 10000000 --threads 2"}, 0, 0,
   "malloc/free throughput: two threads, every free cross-thread", TB_NATIVE},
  {"sites", "wl_costs",
   {"--mode sites --ops 20000", "--mode sites --ops 2000000", "--mode sites --ops 10000000"}, 0, 0,
   "64 allocation sites, each keeping 36 blocks of 16-600 B live while it churns: memory must follow what is live",
   NULL, "no trace: time and memory", NULL, 0, NULL, NULL, NULL, {0}},
  {"threads", "wl_costs",
   {"--mode threads --ops 20000 --keep 1000", "--mode threads --ops 2000000 --keep 1000",
    "--mode threads --ops 10000000 --keep 1000"}, 0, 0,
   "two threads side by side, each freeing and allocating 16-512 B in its own working set (ns per op per thread)",
   NULL, "no trace: time and memory", NULL, 0, NULL, NULL, NULL, {0}},
  {"threads-sizes", "wl_costs",
   {"--mode sizes --ops 20000 --keep 1000", "--mode sizes --ops 2000000 --keep 1000",
    "--mode sizes --ops 10000000 --keep 1000"}, 0, 0,
   "the same two threads with 4 B-32 KiB, as many blocks in each doubling (a 1/x mix: a third of the blocks over 1 KiB)",
   NULL, "no trace: time and memory", NULL, 0, NULL, NULL, NULL, {0}},
  {"threads-glibc", "wl_costs",
   {"--mode glibc --ops 20000 --keep 1024", "--mode glibc --ops 3000000 --keep 1024",
    "--mode glibc --ops 10000000 --keep 1024"}, 0, 0,
   "glibc's thread benchmark's shape: the same two threads, 1024 slots each, 4 B-32 KiB drawn from its 1/x^2 mix (mostly 16 B or less), each block written whole (ns per op per thread)",
   NULL, "no trace: time and memory", NULL, 0, NULL, NULL, NULL, {0}},
  {"scratch-mt", "wl_costs",
   {"--mode scratch --ops 200", "--mode scratch --ops 20000", "--mode scratch --ops 100000"}, 0, 0,
   "Hoard's cache-scratch: two threads each free a block the main thread allocated next to the other's, then allocate 8 B, write it 1000 times and free it (ns per round)",
   NULL, "no trace: time and memory", NULL, 0, NULL, NULL, NULL, {0}},
  {"churn-mt", "wl_costs",
   {"--mode churn --ops 20000 --keep 4096", "--mode churn --ops 1000000 --keep 4096",
    "--mode churn --ops 5000000 --keep 4096"}, 0, 0,
   "two threads replacing random entries of one shared table, 16-1024 B: about half the frees cross threads",
   NULL, "no trace: time and memory", NULL, 0, NULL, NULL, NULL, {0}},
  {"churn-sizes-mt", "wl_costs",
   {"--mode mixed --ops 5 --keep 1000", "--mode mixed --ops 500 --keep 1000", "--mode mixed --ops 500 --keep 1000"}, 0, 0,
   "two threads, each looping: an array of 1000 blocks of 8-16000 B (uniform, first 64 B written), 100 random "
   "replacements, all but the first 100 freed, the array handed to the other thread, which frees it and its 100 "
   "blocks (cross-thread frees). ns per malloc or free of the process's CPU time (user + sys), not wall time; "
   "the per-run table: memory operations per CPU second and peak RSS + hugetlb of each run",
   NULL, "no trace: time and memory", NULL, 0, NULL, NULL, NULL, {0}},
  {"batches-mt", "wl_costs",
   {"--mode batches --ops 20480", "--mode batches --ops 2000000", "--mode batches --ops 10000000"}, 0, 0,
   "xmalloc-test's shape: two threads each allocate batches of 64 blocks of 8-128 B and free the other's batches, handed over through a shared stack (ns per malloc+free per thread)",
   NULL, "no trace: time and memory", NULL, 0, NULL, NULL, NULL, {0}},
  {"bursts-mt", "wl_costs",
   {"--mode bursts --ops 20000 --keep 1000", "--mode bursts --ops 2000000 --keep 10000",
    "--mode bursts --ops 10000000 --keep 10000"}, 0, 0,
   "sh6bench's shape with small blocks: two threads each allocate bursts of --keep blocks of 8-128 B at one call site, then free them (ns per malloc+free per thread)",
   NULL, "no trace: time and memory", NULL, 0, NULL, NULL, NULL, {0}},
  {"handover-mt", "wl_costs",
   {"--mode handover --ops 20000 --keep 1000", "--mode handover --ops 1000000 --keep 8000",
    "--mode handover --ops 5000000 --keep 8000"}, 0, 0,
   "rptest's shape: two threads each keep --keep blocks of 16 B-16 KiB (log-uniform, written whole) at one call site, replacing a random one per op; every 16th new block is exchanged into the other thread's table",
   NULL, "no trace: time and memory", NULL, 0, NULL, NULL, NULL, {0}},
  {"medium", "wl_costs",
   {"--mode medium --ops 2000 --keep 1", "--mode medium --ops 200000 --keep 1", "--mode medium --ops 1000000 --keep 1"}, 0, 0,
   "one thread allocating a buffer of 64 KiB-1 MiB at a time, writing its first and last bytes and freeing it (a codec's or a parser's buffer)",
   NULL, "no trace: time and memory", NULL, 0, NULL, NULL, NULL, {0}},
  {"buffers", "wl_costs",
   {"--mode buffers --ops 2000 --keep 100", "--mode buffers --ops 200000 --keep 1000", "--mode buffers --ops 1000000 --keep 1000"}, 0, 0,
   "one thread keeping 1000 buffers of 33-256 KiB (the largest slab classes), each written in its first tenth only, freeing a random one and allocating another (ns per free+malloc+writes); memory: the pages written, or every huge page touched",
   NULL, "no trace: time and memory", NULL, 0, NULL, NULL, NULL, {0}},
  {"fork", "wl_costs",
   {"--mode fork --ops 3 --keep 20000", "--mode fork --ops 20 --keep 200000 --settle-ms 1000", "--mode fork --ops 40 --keep 400000 --settle-ms 1000"}, 0, 0,
   "a server saving in the background, about 100 MB: --keep records of 64 B-1 KiB, forking a child that reads them all while the parent replaces a tenth (ns per fork+writes+wait); the fork table: fork latency, memory while the child lives, TLB entries before, during and after",
   NULL, "no trace: time and memory", NULL, 0, NULL, NULL, "jemalloc,jemalloc-thp,tlbpack,glibc", {0}},
  {"fork-1g", "wl_costs",
   {"--mode fork --ops 2 --keep 20000 --label fork-1g", "--mode fork --ops 4 --keep 1800000 --settle-ms 3000 --label fork-1g", "--mode fork --ops 6 --keep 1800000 --settle-ms 3000 --label fork-1g"}, 0, 0,
   "the fork row at about 1 GB of records (1.8 M): fork latency, memory while the child lives, TLB entries before, during and after",
   NULL, "no trace: time and memory", NULL, 1, NULL, NULL, "jemalloc,jemalloc-thp,tlbpack", {0}},
  {"partial", "wl_costs",
   {"--mode partial --ops 200 --keep 20", "--mode partial --ops 2000 --keep 100", "--mode partial --ops 10000 --keep 100"}, 0, 0,
   "one thread keeping buffers of 64 KiB-4 MiB, each written in its first tenth only (buffers sized for the worst case), freeing a random one and allocating another (ns per free+malloc+writes); memory: the pages written, or every huge page touched",
   NULL, "no trace: time and memory", NULL, 0, NULL, NULL, NULL, {0}},
  {"startup-python", "wl_costs",
   {"--mode startup --ops 2 --label startup-python --prog /usr/bin/python3,-c,pass", "--mode startup --ops 30 --label startup-python --prog /usr/bin/python3,-c,pass",
    "--mode startup --ops 100 --label startup-python --prog /usr/bin/python3,-c,pass"}, 0, 0,
   "python3 -c pass, run one after another (ns per run; memory: python3's VmHWM + HugetlbPages)",
   "python3", "no trace: start-up time and memory", NULL, 0, "run", NULL, NULL, {0}},
  {"startup-git", "wl_costs",
   {"--mode startup --ops 2 --label startup-git --prog git,--version", "--mode startup --ops 50 --label startup-git --prog git,--version",
    "--mode startup --ops 200 --label startup-git --prog git,--version"}, 0, 0,
   "git --version, run one after another (ns per run)", "git", "no trace: start-up time", NULL, 0, "run", NULL, NULL, {0}},
  {"startup-sh50", "wl_costs",
   {"--mode startup --ops 1 --label startup-sh50 --prog sh,-c,for_i_in_1_2_3;do_/bin/true;done",
    "--mode startup --ops 10 --label startup-sh50 --prog sh,-c,seq_50|while_read_i;do_/bin/true;done",
    "--mode startup --ops 40 --label startup-sh50 --prog sh,-c,seq_50|while_read_i;do_/bin/true;done"}, 0, 0,
   "a shell running 50 short processes (seq | while read; do /bin/true; done): ns per shell run", "sh", "no trace: start-up time", NULL, 0, "run", NULL, NULL, {0}},
  /* Real programs: their data spans more than the L2 TLB reaches with 4 KiB pages (12 MiB) at
   * demo and full scale; each reports the TLB entries for its resident memory at its peak. */
  {"redis", "wl_redis",
   {"--requests 2000 --keys 2000 --keyspace 2000 --datasize 100",
    "--requests 10000 --keys 120000 --keyspace 120000 --datasize 100",
    "--requests 100000 --keys 600000 --keyspace 600000 --datasize 100"}, 0, 1,
   "Debian's redis-server (allocator preloaded into the server only) holding --keys keys of 100 bytes "
   "(demo 120 k, ~33 MB; full 600 k), driven by redis-benchmark -P 16 -c 8 over 8 commands; rows "
   "without a preload are stock redis with its own linked malloc",
   "redis-server redis-benchmark", "no trace: redis-server's memory accesses are not recorded", "redis-stock",
   3, "request", NULL, NULL, {0}},
  {"sqlite-db", "wl_sqlitedb",
   {"--rows 2000 --queries 20000", "--rows 150000 --queries 200000", "--rows 500000 --queries 500000"}, 0, 0,
   "the sqlite3 shell on a database file (demo 150 k rows, ~30 MB; full 500 k) held in its page cache: "
   "random point queries by rowid and through an index",
   "sqlite3", "no trace: sqlite3's memory accesses are not recorded", NULL, 3, "query", NULL, NULL, {0}},
  {"sqlite-py", "wl_sqlitedb",
   {"--via python3 --rows 2000 --queries 20000", "--via python3 --rows 150000 --queries 200000",
    "--via python3 --rows 2600000 --queries 500000"}, 0, 0,
   "python3's sqlite3 module (SQLite embedded in a program, not the shell) on the same database file "
   "(demo 150 k rows, ~30 MB; full 2.6 M, ~500 MB) held in its page cache: random point queries by rowid "
   "and through the index, one Python call each",
   "python3", "no trace: python3's memory accesses are not recorded", NULL, 3, "query", NULL, NULL, {0}},
  /* SQLite linked into the driver (not the shell): traced under lackey, minutes per cell, so
   * not in the demo. 1 GB of pages in the cache at full scale. */
  {.name = "sqlite-lib", .prog = "wl_sqlitelib",
   .args = {"--customers 2000 --queries 2000 --integrity --trace-customers 1000 --trace-queries 10",
            "--customers 60000 --queries 30000 --integrity --trace-customers 24000 --trace-queries 100",
            "--customers 1800000 --queries 200000 --trace-customers 24000 --trace-queries 200"},
   .what = "a program linking libsqlite3: an order-entry database (customers with name and city indexes, 5 "
           "orders each with customer and time indexes; demo 60 k customers, ~33 MB; full 1.8 M, ~1 GB) "
           "read whole into the page cache, then point lookups by index, range scans, joins and updates "
           "(40/20/20/20), 100 to a transaction; traced with valgrind lackey on a 13 MB database",
   .unit = "query", .demo_runs = 3, .allocs = "glibc,jemalloc,tlbpack,tlbpack-sqlite"},
  {"perl-hash", "wl_perl",
   {"--keys 2000 --lookups 5000", "--keys 100000 --lookups 300000", "--keys 600000 --lookups 2000000"}, 0, 0,
   "perl building a hash of 100-byte strings (demo 100 k keys, ~30 MB; full 600 k), then random lookups",
   "perl", "no trace: perl's memory accesses are not recorded", NULL, 3, "lookup", NULL, NULL, {0}},
  /* Programs in general (wl_programs): each run whole, time and peak RSS + hugetlb side by side.
   * Not in the demo; a program not installed skips its row. */
#define TB_PROG(nm, p, need, tiny, demo, full, what)                                              \
  {nm, "wl_programs", {"--prog " p " --ops 1 --n " tiny, "--prog " p " --ops 1 --n " demo,       \
                       "--prog " p " --ops 1 --n " full}, 0, 0, what, need,                    \
   "no trace: a program run whole (time and memory only)", NULL, 0, "run", NULL, NULL, {0}}
  TB_PROG("prog-python", "python", "python3", "2000", "150000", "600000",
          "python3 building a dict of --n entries (a list, a string and a dict each) and sorting it (ns per run)"),
  TB_PROG("prog-perl", "perl", "perl", "2000", "200000", "800000",
          "perl building a hash of --n strings of 0-59 bytes and sorting its keys (ns per run)"),
  TB_PROG("prog-lua", "lua", "lua5.4", "2000", "300000", "1200000",
          "lua5.4 building a table of --n records and an index of a third of them (ns per run)"),
  TB_PROG("prog-sqlite", "sqlite", "sqlite3", "2000", "150000", "600000",
          "sqlite3 in memory inserting --n rows into a table with a text index, one transaction (ns per run)"),
  TB_PROG("prog-z3", "z3", "z3", "20000", "300000", "600000",
          "z3 solving a random integer constraint problem of --n/2500 variables, --n/750 clauses (ns per run)"),
  TB_PROG("prog-gs", "gs", "gs", "3000", "300000", "1200000",
          "Ghostscript rendering --n/30 random filled polygons at 150 dpi (ns per run)"),
  TB_PROG("prog-jq", "jq", "jq", "200", "60000", "240000",
          "jq selecting a third of a JSON array of --n objects and counting them (ns per run)"),
  TB_PROG("prog-xz", "xz", "xz", "500", "40000", "160000",
          "xz -3 -T1 compressing --n lines of text: buffers of 6.8, 8.7 and 16.8 MB (ns per run)"),
  TB_PROG("prog-sort", "sort", "sort", "2000", "400000", "1600000",
          "GNU sort -n of --n random numbers (ns per run)"),
  TB_PROG("prog-awk", "awk", "awk", "2000", "400000", "1600000",
          "awk appending --n numbers to the strings of 100003 keys (ns per run)"),
  TB_PROG("prog-tcl", "tcl", "tclsh", "2000", "80000", "320000",
          "tclsh building a dict of --n lists and walking it (ns per run)"),
  TB_PROG("prog-node", "node", "node", "2000", "300000", "1200000",
          "node building a Map of --n objects and walking it (ns per run)"),
  TB_PROG("prog-cc1", "cc1", "gcc", "3", "100", "400",
          "GCC's cc1 -O2 (without the driver) compiling --n small functions (ns per run)"),
#undef TB_PROG
  /* 4 GiB at full scale: about 67 M mallocs and 4 GiB written per run (a few seconds each). */
  {.name = "gpages", .prog = "wl_gpages",
   .args = {"--heap-mb 64 --lookups 20000", "--heap-mb 1024 --lookups 1000000", "--heap-mb 4096 --lookups 2000000"},
   .what = "a heap of small objects (64 B; demo 1 GiB, full 4 GiB) with random dependent lookups, one node per "
           "4 KiB of heap: tlbpack on 1 GiB pages (tlbbench reserves the 1 GiB pool for it, root) vs 2 MiB "
           "pages vs jemalloc; skipped with a note when no 1 GiB page can be reserved",
   .unit = "lookup", .allocs = "tlbpack-1g,tlbpack-2m,jemalloc", .gpool = {1, 2, 5}},
};
const size_t tb_nworkloads = sizeof tb_workloads / sizeof tb_workloads[0];

/* Rows whose medians hide what matters: each run's throughput and peak memory side by side
 * (summary.md, tb_write_runs). */
const char *const tb_per_run_workloads = "churn-sizes-mt,sqlite-py";

const tb_alloc_t *tb_alloc_find(const char *name) {
  for (size_t i = 0; i < tb_nallocs; i++)
    if (!strcmp(tb_allocs[i].name, name)) return &tb_allocs[i];
  return NULL;
}

const tb_workload_t *tb_workload_find(const char *name) {
  for (size_t i = 0; i < tb_nworkloads; i++)
    if (!strcmp(tb_workloads[i].name, name)) return &tb_workloads[i];
  return NULL;
}

int tb_alloc_override(const char *spec) {
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec || !eq[1] || n_over == 8) return -1;
  static char names[8][32];
  size_t n = (size_t)(eq - spec);
  if (n >= sizeof names[0]) return -1;
  memcpy(names[n_over], spec, n);
  names[n_over][n] = 0;
  over_name[n_over] = names[n_over];
  over_path[n_over] = eq + 1;
  n_over++;
  return 0;
}

/* "jemalloc-thp" -> "jemalloc": overrides apply per library family */
static const char *family(const char *name, char *buf, size_t n) {
  snprintf(buf, n, "%s", name);
  char *dash = strchr(buf, '-');
  if (dash) *dash = 0;
  return buf;
}

const char *tb_alloc_lib(const tb_alloc_t *a, const char *build_dir, char *buf, size_t n,
                         const char **why) {
  char fam[32];
  family(a->name, fam, sizeof fam);
  const char *path = NULL;
  if (a->kind == TB_LIB_NONE) { snprintf(buf, n, "%s", ""); return buf; }
  if (a->kind == TB_LIB_TLBPACK) {
    snprintf(buf, n, "%s/libtlbpack.so", build_dir);
    path = buf;
  } else if (!strcmp(fam, "jemalloc")) path = lib_jemalloc;
  else if (!strcmp(fam, "tcmalloc")) path = lib_tcmalloc;
  else if (!strcmp(fam, "mimalloc")) path = lib_mimalloc;
  for (int i = 0; i < n_over; i++)
    if (!strcmp(over_name[i], fam) || !strcmp(over_name[i], a->name)) path = over_path[i];
  if (!path) { *why = "no library known for it"; return NULL; }
  if (path != buf) snprintf(buf, n, "%s", path);
  if (access(buf, R_OK) != 0) {
    *why = a->kind == TB_LIB_TLBPACK ? "libtlbpack.so is not built yet (next to tlbbench)"
                                     : "library not installed (run `make setup`)";
    return NULL;
  }
  return buf;
}
