/* Placement and caching decisions, as small pure functions of plain values: the mechanisms
 * (group.c, slab.c, tcache.c, alloc.c, heap.c, runs.c) gather the facts and ask here, and the unit
 * tests ask directly (tests/alloc/test_policy.c), with no heap behind them. */
#include "policy.h"

/* Young sites: a refill adds 16 to the site's demand, which halves every TP_SITE_HALF_LIFE
 * refills of the whole process. */
#define TP_SITE_HALF_LIFE 64
#define TP_SITE_DEMAND (8 * 16)
#define TP_SITE_BYTES ((size_t)64 << 10)

uint32_t _tp_policy_site_demand(uint32_t demand, uint64_t *stamp, uint64_t now) {
  uint64_t halvings = (now - *stamp) / TP_SITE_HALF_LIFE;
  if (halvings) *stamp += halvings * TP_SITE_HALF_LIFE;
  return (halvings >= 32 ? 0 : demand >> halvings) + 16;
}

/* A site earns a group of its own when it does a good share of the process's recent refills
 * (a structure being built, not a few blocks churned) and has taken enough memory to fill a
 * slab or two. */
int _tp_policy_site_grows_up(uint32_t demand, size_t bytes) {
  return demand >= TP_SITE_DEMAND && bytes >= TP_SITE_BYTES;
}

/* A group gets hpages of its own once its slot runs hold exclusive_bytes (never under
 * group:none, where nothing is kept apart). One size class of a wrapper site (sitekey.h) waits
 * for TP_SPLIT_CLASS_EXCLUSIVE times that: a wrapper that allocates many sizes splits into a
 * group per class, and at exclusive_kb each class would take a huge page of its own for a few
 * slabs, while its first slabs stay on the shared pages. A class that holds a structure still
 * gets pages of its own once it could fill two. */
#define TP_SPLIT_CLASS_EXCLUSIVE 16 /* x exclusive_kb (256 KiB by default): two huge pages */
int _tp_policy_exclusive(int exclusive, size_t slab_bytes, size_t exclusive_bytes, int group_mode, int split_class) {
  size_t at = split_class ? TP_SPLIT_CLASS_EXCLUSIVE * exclusive_bytes : exclusive_bytes;
  return !exclusive && slab_bytes >= at && group_mode != TP_GROUP_NONE;
}

/* Idle groups' room: when the shared hpages are full, a new shared slab goes into a free run of
 * a huge page that a site or thread group owns but has stopped filling (no refill in
 * TP_LEND_REFILLS refills of the process), up to 3/4 of that page (runs.c, borrow_idle_room),
 * before a new hpage is taken. A site that grew past exclusive_kb and then stopped leaves most
 * of its page free, and a huge page is resident whole. An explicit group's pages are never lent:
 * they are its promise, and tp_group_destroy releases what they hold. The lender's data keeps
 * its page (its TLB entries do not move), and a quarter of the page for when it fills again. */
int _tp_policy_lend(int explicit_, int exclusive, uint64_t since_refill) {
  return !explicit_ && exclusive && since_refill > TP_LEND_REFILLS;
}

/* A block freed by a thread that does not fill from its slab goes back to the slab (through
 * the thread's remote bin) rather than into its cache, when blocks of its size share cache
 * lines: reused by this thread, it would share a line with blocks the filling thread writes
 * (passive false sharing, Hoard's cache-scratch). Larger blocks are reused here: sending every
 * cross-thread free back costs a refill and a flush per batch. Asked once per slab (slab.c,
 * slab_new: remote_mask); the free hit reads the mask. A consumer (below) clears it. */
/* A cache line: smaller blocks share lines with their neighbours. */
#define TP_REMOTE_FREE_BELOW 64
int _tp_policy_free_remote(uint32_t size) { return size < TP_REMOTE_FREE_BELOW; }

/* ...but a thread that keeps freeing another live thread's small blocks (a consumer, freeing
 * the batches a producer makes) stops sending them back once its remote bin of that group and
 * class has filled TP_REMOTE_STOP_FLUSHES times, and caches them. Each batch sent back costs a
 * flush under the bin lock and a refill that tags its blocks again, lines the other thread has
 * just written; a thread that frees one block now and then never fills its remote bin and is
 * not affected. The slabs such a thread frees into drop their remote mask, so the free hit
 * caches the block without a mispredicted branch to the slow path. */
/* Full remote bins (4 x 64 blocks): a consumer, not a passing exchange of a few blocks. */
#define TP_REMOTE_STOP_FLUSHES 4
int _tp_policy_free_remote_stop(uint32_t flushes) { return flushes >= TP_REMOTE_STOP_FLUSHES; }

/* A 2 MiB unit of metadata (meta.c) becomes a huge page once `used` bytes of it are handed out:
 * half of it, or all of the process's first unit, which a small process never fills. Advised
 * before they are touched, the units after the first would be resident whole from their first
 * record. At most 256 TLB entries of 4 KiB for the unit being filled, for at most 1 MiB of a
 * huge page not used. Once metadata (`total` bytes) is 8 MiB, a heap of some 400 MiB and more,
 * a unit is a huge page from its first record again: 2 MiB is little beside such a heap, and
 * its 4 KiB pages are not. */
int _tp_policy_meta_huge(size_t used, int first, size_t total) {
  if (first) return used >= TP_HPAGE;
  return used >= TP_HPAGE / 2 || (used > 0 && total >= 4 * TP_HPAGE);
}

/* Other groups' holes are filled (runs.c, borrow_holes) once the free slots of the huge pages
 * carved into slot runs are at least one huge page and an eighth of those pages. */
int _tp_policy_fill_holes(size_t hole_bytes, size_t page_bytes) {
  return hole_bytes >= TP_HPAGE && hole_bytes * 8 >= page_bytes;
}

/* The last hpage of a large run, when the block uses at most an eighth of it, is backed by
 * 4 KiB pages under pool:auto (runs.c, alloc_large): a pool page is resident whole from the
 * start, and THP faults a whole 2 MiB on the first touch, for the few bytes past 2 MiB of a
 * 2 MiB + 8 buffer or the 128 KiB past 8 MiB of an 8.5 MB block. An eighth is at most 64 TLB
 * entries of 4 KiB for at least 1.75 MiB saved; a tail that uses more keeps its huge page. */
int _tp_policy_large_tail_4k(size_t last_bytes, int pool_auto) {
  return pool_auto && last_bytes > 0 && last_bytes <= TP_HPAGE / 8;
}

/* Blocks of the slab classes above one slot (32 KiB < size <= 256 KiB) of a site that writes
 * little of them. In a slab on a huge page every block is resident whole, so a read buffer
 * sized for the largest message and written in its first few KiB holds all of it. Such a site's
 * blocks are sampled as medium runs are (below): its second block of these sizes is a medium
 * run on fresh 4 KiB pages (TP_ROUTE_SAMPLE), measured when it is freed or at the site's next
 * block. Found sparse, the site takes these classes from the slabs of a group whose hpages stay
 * on 4 KiB pages (TP_ROUTE_4K: resident where written, its blocks' pages kept as the program
 * reuses them); found dense, from its own group's slabs (TP_ROUTE_SLAB). A site found sparse is
 * sampled again at its 256th block, 512th, 1024th ... Up to one slot a block is a few 4 KiB
 * pages, which a huge page's TLB entry pays for. `next`: the site's blocks of these sizes with
 * this one (medium and large runs count too). */
int _tp_policy_slab_block_sampled(size_t size) { return size > TP_SLOT && size <= TP_SMALL_MAX; }
int _tp_policy_slab_block_route(uint32_t next, int verdict) {
  int again = next >= 256 && (next & (next - 1)) == 0;
  if (verdict == TP_LARGE_SPARSE) return again ? TP_ROUTE_SAMPLE : TP_ROUTE_4K;
  return _tp_policy_large_on_4k(1, next, verdict, 1) ? TP_ROUTE_SAMPLE : TP_ROUTE_SLAB;
}

/* Medium and large runs of sites that fill them in part. A huge page is resident whole (a pool
 * page from the moment it is backed or reused, a THP one from its first touch), so a buffer of
 * 256 KiB to a few MiB that the program writes a tenth of holds several times what it uses
 * (tlbbench's `partial` workload). A site's medium runs, and large ones of up to
 * TP_SPARSE_MAX_HPAGES hpages, go on 4 KiB pages once a sample of them was found sparse
 * (below): a large one on fresh 4 KiB pages, a medium one as a run of one hpage of its own on
 * 4 KiB pages (2 MiB of address space, resident where written). So does a sample: its second
 * such run, then its 256th, 512th, 1024th ... (a site that changes its habits is seen again, at
 * a cost that grows as the logarithm of its runs: a sample written whole is faulted in 4 KiB at
 * a time and copied into huge pages at the site's next run; sampling at every power of two from
 * the start would catch too many blocks of a site that allocates a few). Its first run never
 * is: a table allocated once, and kept hot, stays on huge pages. Runs past TP_SPARSE_MAX_HPAGES
 * are left to the lazy pool mapping (a fresh hpage is resident only once touched: what a huge
 * page can waste of them is less of the run), and nothing changes under pool:hugetlbfs, thp or
 * 4k, which are asked for. */
int _tp_policy_large_on_4k(size_t nhpages, uint32_t site_runs, int verdict, int pool_auto) {
  if (!pool_auto || nhpages == 0 || nhpages > TP_SPARSE_MAX_HPAGES) return 0;
  if (verdict == TP_LARGE_SPARSE) return 1;
  return site_runs == 2 || (site_runs >= 256 && (site_runs & (site_runs - 1)) == 0);
}

/* A run on 4 KiB pages of `asked` bytes that the program touched `touched` bytes of, on
 * `hpages_touched` of its hpages, is sparse when what huge pages would hold for it is at most a
 * quarter used: those hpages for a large block, its own slots (on a huge page shared with other
 * runs) for a medium one (counted by mincore when it is freed, or at its site's next run while
 * it is live). A run found dense while it is live is collapsed into huge pages there and then. */
int _tp_policy_large_sparse(size_t touched, size_t hpages_touched, size_t asked) {
  size_t huge = asked <= TP_MEDIUM_MAX ? asked : hpages_touched * TP_HPAGE;
  return touched * 4 <= huge;
}

/* A large run of `have` hpages that grows in place by `adding` maps its new pool pages lazily
 * (reserved, faulted in as touched) when it grows by at least half: a buffer grown by doubling
 * touches its new half as it fills it. Each lazy mapping is a mapping of its own (hugetlb
 * mappings never merge), so smaller steps take window pages one by one: a buffer grown 2 MiB at
 * a time would otherwise add a mapping a step, where growth by half adds a logarithm. */
int _tp_policy_grow_lazily(size_t have, size_t adding) { return adding > 0 && adding * 2 >= have; }

/* A large run of 8 MiB or more freed while the program does not cycle through such runs goes
 * back to the pool or the OS at once, whatever retain_mb leaves room for: a buffer freed once
 * (a sorter's, after it built an index) would otherwise sit on up to retain_mb of pool pages
 * until the retained pages decay, and they decay only while the program refills its caches; a
 * program that serves queries from its caches would hold them for good. The program cycles once
 * it allocates such a run within TP_LARGE_CYCLE_MS of giving one back (`cycling`, runs.c): from
 * then on they are kept (_tp_policy_keep_large_run), and a loop of malloc(32 MiB) + free pays
 * for fresh pages once. */
/* A loop's next round comes sooner than this; a one-off buffer's successor, later. */
#define TP_LARGE_CYCLE_MS 1000
int _tp_policy_give_back_large_run(size_t run_bytes, int cycling) {
  return !cycling && run_bytes >= TP_ONEOFF_LARGE_BYTES;
}
int _tp_policy_large_cycling(int gave_back, uint64_t gave_back_ms, uint64_t now_ms) {
  return gave_back && now_ms - gave_back_ms <= TP_LARGE_CYCLE_MS;
}

/* A large run freed whose pool pages are more than retain_mb keeps them (the older empty pages
 * go back first) while the pool has at least as many free pages besides: a program that
 * allocates and frees a buffer over retain_mb in a loop would otherwise back and zero it anew
 * every round, and the kept
 * pages still decay like any retained page. When the pool is short they go back to it, and
 * retain_mb:0 keeps nothing. */
int _tp_policy_keep_large_run(size_t run_pool_bytes, size_t retain_bytes, long pool_free_pages) {
  return retain_bytes > 0 && run_pool_bytes > retain_bytes && pool_free_pages >= 0 &&
         (size_t)pool_free_pages >= run_pool_bytes / TP_HPAGE;
}

/* A bin is hot while its group is in use: not idle (an exited thread's group), refilled within
 * TP_IDLE_REFILLS refills of the process, not joined to another group. */
int _tp_policy_bin_hot(int idle, uint64_t now, uint64_t last_fill, int aliased) {
  return !idle && now - last_fill <= TP_IDLE_REFILLS && !aliased;
}

/* An empty slab of a hot bin stays in its lane, up to TP_KEEP_EMPTY_BYTES of them (at least
 * one), for the lane's next refills: a program that allocates a burst of blocks and frees it
 * again (a request's or a parse's nodes) would otherwise give its slabs back at every burst and
 * make them again at the next, writing the slot maps and hpage records that threads share. The
 * kept slabs stay resident as released ones would (giving a slab back frees its slots, not its
 * pages); what keeping costs is that other classes and lanes cannot carve those slots
 * meanwhile, which TP_KEEP_EMPTY_BYTES bounds. They go back at malloc_trim and once the class
 * stops refilling (slab.c, _tp_bin_sweep). An idle bin keeps none, nor do classes of fewer than
 * TP_KEEP_EMPTY_MIN_OBJS objects per slab, so that empty slabs do not pin huge pages. The group
 * on 4 KiB pages (`on_4k`, _tp_policy_slab_block_route) keeps a hot lane's empty slabs of every
 * class, up to TP_KEEP_EMPTY_4K_BYTES of them: their pages are resident where written whether
 * kept or released, and released, the slots of a slab of one or two blocks would be carved
 * again by another class at other offsets, so that the pages written creep over the whole
 * heap. */
/* Fewer objects a slab: large ones, whose empty slabs would pin huge pages. */
#define TP_KEEP_EMPTY_MIN_OBJS 8
int _tp_policy_release_empty_slab(size_t lane_empty, size_t slab_bytes, uint32_t nobj, int hot, int on_4k) {
  if (on_4k) return !hot || lane_empty * slab_bytes >= TP_KEEP_EMPTY_4K_BYTES;
  return nobj < TP_KEEP_EMPTY_MIN_OBJS || !hot || (lane_empty > 0 && (lane_empty + 1) * slab_bytes > TP_KEEP_EMPTY_BYTES);
}

/* A refill asks for half the class's cap, in whole bitmap words up to the cap for the small
 * classes. A bin's first TP_SLOW_START_POPS blocks come a few at a time (slow start): no more
 * than the bin has popped so far (at least one: 1, 1, 2, 4, ...), up to TP_SLOW_START_BATCH
 * blocks, and for the kilobyte classes up to what fits in TP_SLOW_START_BYTES. A thread that
 * allocates a few blocks of many classes would otherwise hold up to 64 of each in its cache, and
 * on huge pages they are resident; doubling costs a bin 3 more refills than batches of 8 on its
 * way to 64 pops. A buffer grown by realloc through the classes takes one block of each, and its
 * site's group would cache a batch of every class it passed. A slow refill from another live
 * thread's slab still takes a whole word (slab.c), so that words stay one thread's. Returns
 * whether the refill is slow. */
int _tp_policy_slow_start(uint64_t bin_pops, uint32_t size, unsigned *want) {
  unsigned slow = size > TP_SLOW_START_BYTES / TP_SLOW_START_BATCH ? TP_SLOW_START_BYTES / size : TP_SLOW_START_BATCH;
  if (bin_pops < slow) slow = (unsigned)bin_pops; /* no more than it has popped: 1, 1, 2, 4, 8 */
  if (slow == 0) slow = 1;
  if (bin_pops >= TP_SLOW_START_POPS || *want <= slow) return 0;
  *want = slow;
  return 1;
}

/* Whether a refill of a bin that has popped bin_pops blocks counts as one of its young site's
 * refills (group.c, the site's demand), the class's refills being `batch` blocks of `size`
 * bytes: during the slow start, one refill per batch's worth of blocks counts, or young sites
 * would grow up on the small refills. */
int _tp_policy_slow_refill_counts(uint64_t bin_pops, uint32_t size, unsigned batch) {
  unsigned want = batch;
  return !_tp_policy_slow_start(bin_pops, size, &want) || bin_pops % batch < want;
}

/* How many freed blocks a thread's bin keeps. Under group:thread, blocks freed into another
 * thread's group are of no use to this one (it allocates from its own group only): they go
 * back to their slabs at once, or they would pin that group's slabs after its thread exits. */
uint32_t _tp_policy_tbin_limit(int mode, unsigned g, unsigned thread_group, uint32_t cap) {
  return mode == TP_GROUP_THREAD && g != thread_group ? 0 : cap;
}

/* Site adoption's evidence, all of it: a site group (not libc's crumbs: it holds real memory)
 * that has stopped allocating, whose freed blocks of this class fill half this thread's cache
 * or, gone back to its slabs, make TP_ADOPT_FREE_BYTES (the thread freed them: it is the group
 * whose cache last overflowed here). TP_ADOPT_VOTES such sightings in a row make the adoption.
 * Counted in the cache only, a program that frees half its blocks and allocates as many again
 * at another site would take new memory instead of reusing them whenever the cache of the idle
 * group had been trimmed by then. */
int _tp_policy_adopt_donor(int is_other_site_group, int donor_aliased, unsigned cached, unsigned cap,
                           size_t donor_free_bytes, size_t donor_slab_bytes, size_t exclusive_bytes,
                           uint64_t since_donor_refill) {
  return is_other_site_group && !donor_aliased && cap != 0 && (cached >= cap / 2 || donor_free_bytes >= TP_ADOPT_FREE_BYTES) &&
         donor_slab_bytes >= exclusive_bytes && since_donor_refill > TP_IDLE_REFILLS;
}

/* Whether realloc to `size` keeps a block of `old` usable bytes where it is. A small block
 * stays only within its size class: shrunk into a smaller class it moves there, so that the
 * smaller class's slabs fill and no hole of the larger class is left for good when the program
 * never allocates that class again (redis trims every inline SET's value to a smaller class).
 * Larger blocks (and arena blocks, whose place is their allocation order) stay when
 * at least half is still used. Growth always moves. */
int _tp_policy_realloc_keeps(int small, size_t old, size_t size) {
  if (size > old) return 0;
  if (small) return _tp_class_of(size ? size : 1) == _tp_class_of(old);
  return size >= old / 2;
}

/* Whether a block that realloc moves (it left its class, or grew past it) leaves its group for
 * the group its site's calls of the new size take: when the group is a wrapper's group of one
 * class (key_class >= 0, the class of the site + class key) and the new size is not of that
 * class. Any other group keeps the block (a whole site's, a thread's, an explicit group). */
int _tp_policy_realloc_leaves_class_group(int key_class, size_t size) {
  return key_class >= 0 && (size > TP_SMALL_MAX || _tp_class_of(size ? size : 1) != (unsigned)key_class);
}

/* Holes left in the shared group: a grown site group about to carve a new slab of a class (its
 * slabs have fewer available objects than the refill wants) takes this refill from the shared
 * group instead when the shared group's slabs of that class hold at least two slabs' worth of
 * available objects and a sixteenth of their room. A program whose blocks of a class were
 * allocated while their site was young (or through a realloc that keeps the group) and are
 * later freed and replaced from the grown site's group would otherwise keep those holes for
 * good (at a quarter of the room, enough were left that the site's group took another huge
 * page). One refill at a time: the site keeps its group. */
int _tp_policy_borrow_shared(size_t own_avail, unsigned want, size_t shared_avail, size_t shared_slabs,
                             uint32_t nobj) {
  return own_avail < want && shared_avail >= 2 * (size_t)nobj && shared_avail * 16 >= shared_slabs * nobj;
}

/* A start hpage (on 4 KiB pages until the heap carved start_kb) is collapsed into a huge page
 * once at least 3/4 of it is touched (`touched`: the 4 KiB pages the program used, in slots;
 * heap.c counts them with mincore), or once its free slots (TP_SLOTS - `carved`) are at most
 * 1/32 of the heap's bytes in memory (`heap_bytes`: its backed hpages' touched 4 KiB pages,
 * also by mincore, not the bytes backed, which count buffers the program asked for and never
 * filled) (any number on a page the shared group owns with a quarter of it touched: `shared`,
 * below) and the untouched memory the collapse makes resident, with what earlier collapses of
 * sparse pages added (`added`), is at most 1/8 of them. A start page with data on it costs one
 * TLB entry per 4 KiB page used, and the first one holds what the program set up first, often
 * its hottest data. The total matters because a heap of many groups starts on many sparse pages
 * (start pages follow carved bytes), and collapsed one by one at 1/32 each they would add far
 * more than 1/32 of the heap. A slab is carved whole and touched as it fills, so carved slots
 * overstate what a page holds: touched pages are counted instead. A page the shared group owns
 * with a quarter of it touched (128 4 KiB TLB entries or more) is collapsed whatever its free
 * room: once a huge page, its room takes the shared group's next slabs before any new page is
 * backed, while an exclusive group's may never be carved. A page with a block or two on it is
 * not worth 2 MiB whoever owns it. Nor is one carved whole and barely touched (a buffer asked
 * for and left, or slabs freed before they filled): under a quarter touched, the 1/32 bound is
 * of its untouched slots, what the collapse would make resident, not of its free ones. */
int _tp_policy_promote_start(unsigned carved, unsigned touched, size_t heap_bytes, size_t added, int shared) {
  if (touched >= TP_SLOTS * 3 / 4) return 1;
  size_t room = (size_t)(TP_SLOTS - (carved < TP_SLOTS ? carved : TP_SLOTS)) * TP_SLOT;
  size_t adds = (size_t)(TP_SLOTS - touched) * TP_SLOT;
  int quarter = touched * 4 >= TP_SLOTS; /* 128 and more 4 KiB TLB entries */
  int holds_data = shared && quarter;
  size_t free_part = quarter ? room : adds;
  return carved > 0 && touched > 0 && (holds_data || free_part * 32 <= heap_bytes) && (added + adds) * 8 <= heap_bytes;
}

/* A thread that finds no partial slab of its own or free of other threads shares one only once
 * the bin has this many partial slabs (slab.c, pick_partial): separation costs at most a few
 * slabs a class. */
#define TP_SHARE_SLAB_PARTIALS 2 /* one slab for each of two threads before they share */
int _tp_policy_share_slab(unsigned partial_slabs) { return partial_slabs >= TP_SHARE_SLAB_PARTIALS; }

/* Whether a start page holds data worth a huge page, `touched` bytes of it in memory and
 * `carved` carved: a quarter of it touched (128 TLB entries of 4 KiB for its data, against
 * one), or an eighth where that is half of what is carved on it (a structure written as it was
 * carved, not slabs carved whole and barely written). */
int _tp_policy_start_holds_data(size_t touched, size_t carved) {
  return touched * 4 >= TP_HPAGE || (touched * 8 >= TP_HPAGE && touched * 2 >= carved);
}

/* Whether a group filled a start page that has 3/4 of its slots carved (the caller's test),
 * `touched` bytes of it in memory, in a heap of `heap_used` bytes carved: 3/4 of it touched;
 * or, in a heap that has carved TP_GROW_HALF_BYTES, half of it touched where what its collapse
 * adds (the untouched part) is at most an eighth of the heap. Carved slots run ahead of what
 * is written: each thread fills a slab of each class at a time, so threads building records
 * of many classes carve a page whole well before they have written it. In a heap under
 * TP_GROW_HALF_BYTES a group growing up on half a page costs more than it saves: the collapse
 * adds up to 1 MiB and its next huge page is partly used. */
int _tp_policy_start_filled(size_t touched, size_t heap_used) {
  if (touched >= (size_t)TP_HPAGE) return 1;
  size_t adds = (size_t)TP_HPAGE - touched;
  return adds * 4 <= (size_t)TP_HPAGE ||
         (heap_used >= TP_GROW_HALF_BYTES && touched * 2 >= (size_t)TP_HPAGE && adds * 8 <= heap_used);
}
