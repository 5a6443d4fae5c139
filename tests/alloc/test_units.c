/* Unit tests of the allocator's pure parts: size classes, options, the hpage filler and slot
 * runs (at fake addresses: no memory behind them). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* ---- size classes ---------------------------------------------------------------------- */
TestSuite(sizeclass, .init = _tp_classes_init);

Test(sizeclass, every_size_maps_to_the_smallest_class_that_fits) {
  for (size_t n = 1; n <= TP_SMALL_MAX; n++) {
    unsigned c = _tp_class_of(n);
    cr_assert_lt(c, TP_NCLASSES, "size %zu -> class %u", n, c);
    cr_assert_geq(_tp_classes[c].size, n, "size %zu -> class %u of %u bytes", n, c, _tp_classes[c].size);
    if (c > 0) cr_assert_lt(_tp_classes[c - 1].size, n, "size %zu could use class %u", n, c - 1);
  }
}

Test(sizeclass, classes_are_16_byte_multiples_and_waste_at_most_an_eighth_of_a_slab) {
  for (unsigned c = 0; c < TP_NCLASSES; c++) {
    const tp_class_t *k = &_tp_classes[c];
    cr_assert_eq(k->size % 16, 0, "class %u size %u", c, k->size);
    size_t slab = k->nslots * TP_SLOT;
    cr_assert_geq(k->nobj, 1);
    cr_assert_leq((slab - (size_t)k->nobj * k->size) * 8, slab, "class %u (%u B) wastes too much", c, k->size);
    cr_assert_eq(k->nwords, (k->nobj + 63) / 64);
  }
  cr_assert_eq(_tp_classes[TP_NCLASSES - 1].size, TP_SMALL_MAX);
}

/* From 4 KiB up a class takes the shortest slab of up to 4 slots that wastes at most 1/32, where
 * one exists (5120 B: 3 slots of 19 blocks, not 1 slot of 6 that left 2 KiB); below, one slot
 * wherever 1/8 allows it. */
Test(sizeclass, kilobyte_classes_take_the_shortest_slab_of_up_to_4_slots_that_wastes_a_32nd) {
  for (unsigned c = 0; c < TP_NCLASSES; c++) {
    const tp_class_t *k = &_tp_classes[c];
    unsigned want = 0;
    for (unsigned n = 1; k->size >= 4096 && n <= 4 && !want; n++) {
      size_t bytes = n * TP_SLOT, nobj = bytes / k->size;
      if (nobj > 0 && (bytes - nobj * k->size) * 32 <= bytes) want = n;
    }
    if (want) cr_assert_eq(k->nslots, want, "class %u (%u B): %u slots, %u waste at most 1/32", c, k->size, k->nslots, want);
    else if (k->size <= TP_SLOT && (TP_SLOT - TP_SLOT / k->size * k->size) * 8 <= TP_SLOT)
      cr_assert_eq(k->nslots, 1, "class %u (%u B) fits one slot", c, k->size);
  }
  unsigned c5 = _tp_class_of(5000);
  cr_assert_eq(_tp_classes[c5].size, 5120);
  cr_assert_eq(_tp_classes[c5].nslots, 3);
  cr_assert_eq(_tp_classes[c5].nobj, 19);
  /* A 4 KiB page and a small header (SQLite's page cache: 4.3 KiB) takes a class 12.5% over 4
   * KiB, not 25% (eight classes per power of two from 4 KiB to 32 KiB): 7 in one slot. */
  unsigned c45 = _tp_class_of(4096 + 264);
  cr_assert_eq(_tp_classes[c45].size, 4608);
  cr_assert_eq(_tp_classes[c45].nslots, 1);
  cr_assert_eq(_tp_classes[c45].nobj, 7);
  for (size_t n = 4097; n <= 32768; n += 97)
    cr_assert_leq(_tp_class_size(_tp_class_of(n)) * 8, (n - 1) * 9 + 8 * 9, "size %zu rounds to %zu, more than 1/8 over", n,
                  _tp_class_size(_tp_class_of(n)));
}

Test(sizeclass, reciprocal_divides_exactly_for_every_object_offset) {
  for (unsigned c = 0; c < TP_NCLASSES; c++) {
    const tp_class_t *k = &_tp_classes[c];
    for (uint64_t idx = 0; idx < k->nobj; idx++) {
      uint64_t off = idx * k->size;
      cr_assert_eq(_tp_obj_index(off, k->recip), idx, "class %u idx %lu", c, (unsigned long)idx);
      cr_assert(_tp_obj_start(off, k->recip), "class %u: offset %lu not a start", c, (unsigned long)off);
      if (k->size > 1) { /* an interior offset never looks like an object start */
        uint64_t in = off + k->size - 1, q = _tp_obj_index(in, k->recip);
        cr_assert(q * k->size != in);
        cr_assert_eq(q, idx, "class %u: offset %lu in object %lu", c, (unsigned long)in, (unsigned long)idx);
        cr_assert(!_tp_obj_start(in, k->recip) && !_tp_obj_start(off + 1, k->recip) && !_tp_obj_start(off + k->size / 2, k->recip));
      }
    }
  }
  /* every offset of a 2 MiB page, for a few sizes (the free hit's test that p starts a block) */
  uint32_t sizes[] = {16, 48, 80, 112, 640, 1792, 3072, 12288, 28672};
  for (unsigned i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    uint64_t r = _tp_recip(sizes[i]);
    uint64_t bad = UINT64_MAX;
    for (uint64_t off = 0; off < ((uint64_t)2 << 20) && bad == UINT64_MAX; off++)
      if (_tp_obj_start(off, r) != (off % sizes[i] == 0) || _tp_obj_index(off, r) != off / sizes[i]) bad = off;
    cr_assert_eq(bad, UINT64_MAX, "size %u, offset %lu", sizes[i], (unsigned long)bad);
  }
  cr_assert(!_tp_obj_start(0, 0), "recip 0 (not a small slab) takes no offset as a start");
}

/* ---- options ----------------------------------------------------------------------------- */
static int parse(tp_options_t *o, const char *conf, char *warn, size_t wn) {
  FILE *w = fmemopen(warn, wn, "w");
  int n = _tp_options_parse(o, conf, w);
  fclose(w);
  return n;
}

Test(options, defaults_when_unset) {
  tp_options_t o;
  cr_assert_eq(_tp_options_parse(&o, NULL, NULL), 0);
  cr_assert_eq(o.pool, TP_POOL_AUTO);
  cr_assert_eq(o.group, TP_GROUP_SITE);
  cr_assert_eq(o.stats, TP_STATS_OFF);
  cr_assert_eq(o.retain_bytes, (size_t)16 << 20);
  cr_assert_eq(o.start_bytes, (size_t)16 << 20, "start_kb: a heap stays on 4 KiB pages up to 16 MiB carved");
}

Test(options, every_documented_key_is_accepted) {
  tp_options_t o;
  char w[512] = {0};
  cr_assert_eq(parse(&o, "stats:1,pool:4k,group:thread,numa:interleave,regions:/tmp/r.txt,retain_mb:8,"
                         "sites:10,exclusive_kb:256,verbose:1,pool_max:12", w, sizeof w), 0, "%s", w);
  cr_assert_eq(o.stats, TP_STATS_TEXT);
  cr_assert_eq(o.pool, TP_POOL_4K);
  cr_assert_eq(o.group, TP_GROUP_THREAD);
  cr_assert_eq(o.numa, TP_NUMA_INTERLEAVE);
  cr_assert_str_eq(o.regions_path, "/tmp/r.txt");
  cr_assert_eq(o.retain_bytes, (size_t)8 << 20);
  cr_assert_eq(o.site_groups, 10);
  cr_assert_eq(o.exclusive_bytes, 256 * 1024);
  cr_assert_eq(o.verbose, 1);
  cr_assert_eq(o.pool_max, 12);
}

Test(options, pool_max_is_uncapped_by_default_and_takes_whole_pages_up_to_a_million) {
  tp_options_t o;
  char w[512] = {0};
  cr_assert_eq(parse(&o, "", w, sizeof w), 0);
  cr_assert_eq(o.pool_max, SIZE_MAX);
  cr_assert_eq(parse(&o, "pool_max:0", w, sizeof w), 0, "%s", w);
  cr_assert_eq(o.pool_max, 0, "0: no page from the pool");
  cr_assert_eq(parse(&o, "pool_max:1048576", w, sizeof w), 0, "%s", w);
  cr_assert_eq(o.pool_max, 1048576);
  cr_assert_eq(parse(&o, "pool_max:1048577,pool_max:-1,pool_max:8M", w, sizeof w), 3, "%s", w);
  cr_assert_eq(o.pool_max, SIZE_MAX);
  cr_assert(strstr(w, "a whole number of 2 MiB pages, 0-1048576") != NULL, "%s", w);
}

Test(options, a_bad_value_warns_naming_the_key_and_keeps_the_default) {
  tp_options_t o;
  char w[512] = {0};
  cr_assert_eq(parse(&o, "pool:huge,retain_mb:-3,stats:1", w, sizeof w), 2);
  cr_assert_eq(o.pool, TP_POOL_AUTO);
  cr_assert_eq(o.retain_bytes, (size_t)16 << 20);
  cr_assert_eq(o.stats, TP_STATS_TEXT, "good keys after bad ones still apply");
  cr_assert(strstr(w, "'huge' for key 'pool'") != NULL, "%s", w);
  cr_assert(strstr(w, "auto, hugetlbfs, thp or 4k") != NULL, "%s", w);
  cr_assert(strstr(w, "key 'retain_mb'") != NULL, "%s", w);
}

Test(options, unknown_keys_empty_values_and_garbage_warn_once_each) {
  tp_options_t o;
  char w[1024] = {0};
  cr_assert_eq(parse(&o, "colour:blue,pool:,justaword,,sites:99999999999999999999999", w, sizeof w), 4, "%s", w);
  cr_assert(strstr(w, "unknown key 'colour'") != NULL, "%s", w);
  cr_assert(strstr(w, "empty value") != NULL, "%s", w);
  cr_assert(strstr(w, "'justaword' is not key:value") != NULL, "%s", w);
}

Test(options, a_very_long_string_is_survived) {
  static char conf[100000];
  memset(conf, 'x', sizeof conf - 1);
  conf[5] = ':';
  tp_options_t o;
  cr_assert_eq(_tp_options_parse(&o, conf, NULL), 1);
  cr_assert_eq(o.pool, TP_POOL_AUTO);
}

/* ---- slot runs and the filler, at fake addresses ------------------------------------------ */
/* Masks are of TP_SLOTS bits (64: 32 KiB slots); a run may cross bit 31. */
Test(filler, finds_the_first_run_of_free_slots) {
  const tp_slotmask_t alt = (tp_slotmask_t)0xF0F0F0F0F0F0F0F0ull;
  cr_assert_eq(_tp_slots_find_run(0, 1), 0);
  cr_assert_eq(_tp_slots_find_run(0, TP_SLOTS), 0);
  cr_assert_eq(_tp_slots_find_run(1, TP_SLOTS), -1);
  cr_assert_eq(_tp_slots_find_run(0x1, 1), 1);
  cr_assert_eq(_tp_slots_find_run(0xF, 4), 4);
  cr_assert_eq(_tp_slots_find_run(alt, 4), 0);
  cr_assert_eq(_tp_slots_find_run(alt, 5), -1);
  cr_assert_eq(_tp_slots_find_run(TP_ALL_SLOTS >> 1, 1), TP_SLOTS - 1);
  cr_assert_eq(_tp_slots_find_run(TP_ALL_SLOTS >> 1, 2), -1);
  cr_assert_eq(_tp_slots_find_run(TP_ALL_SLOTS, 1), -1);
  /* slots 30-33 free, every other slot used */
  cr_assert_eq(_tp_slots_find_run(~TP_SLOT_RUN(30, 4), 4), 30);
  cr_assert_eq(_tp_slots_find_run(~TP_SLOT_RUN(30, 4), 5), -1);
  cr_assert_eq(_tp_slots_find_run_step(0x1, 1, 2), 2, "slot 1 is free but odd");
  cr_assert_eq(_tp_slots_find_run_step(0x5, 2, 2), 4, "slots 0 and 2 used");
  cr_assert_eq(_tp_slots_find_run_step(~TP_SLOT_RUN(31, 4), 2, 2), 32, "31-32 is free but starts odd");
  cr_assert_eq(_tp_slots_find_run_step(~TP_SLOT_RUN(31, 3), 2, 2), 32);
  cr_assert_eq(_tp_slots_find_run_step(~TP_SLOT_RUN(31, 2), 2, 2), -1);
  cr_assert_eq(TP_SLOT_RUN(0, TP_SLOTS), TP_ALL_SLOTS);
  cr_assert_eq(TP_SLOT_RUN(TP_SLOTS - 1, 1), (tp_slotmask_t)1 << (TP_SLOTS - 1));
}

/* The doubling search against a slot-by-slot one, on random masks of every density. */
Test(filler, the_run_search_agrees_with_a_slot_by_slot_scan) {
  uint64_t x = 88172645463325252ull;
  for (int t = 0; t < 3000; t++) {
    tp_slotmask_t used = 0;
    for (int k = 0; k < 1 + t % 4; k++) { /* AND / OR of random words: sparse to dense */
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      used = k == 0 ? (tp_slotmask_t)x : t % 2 ? used & (tp_slotmask_t)x : used | (tp_slotmask_t)x;
    }
    for (unsigned n = 1; n <= TP_SLOTS; n++)
      for (unsigned step = 1; step <= 2; step++) {
        int want = -1;
        for (unsigned i = 0; i + n <= TP_SLOTS && want < 0; i += step) {
          unsigned j = 0;
          while (j < n && !(used >> (i + j) & 1)) j++;
          if (j == n) want = (int)i;
        }
        cr_assert_eq(_tp_slots_find_run_step(used, n, step), want, "mask %#llx, %u slots, step %u",
                     (unsigned long long)used, n, step);
      }
  }
}

static tp_hpage_t fake[4];

static void fake_setup(void) {
  memset(fake, 0, sizeof fake);
  for (int i = 0; i < 4; i++) fake[i].addr = 0x100000000000ul + (uintptr_t)i * TP_HPAGE;
}

TestSuite(filler, .init = fake_setup);

Test(filler, picks_the_fullest_hpage_that_still_has_room) {
  tp_filler_t f = {0};
  for (int i = 0; i < 3; i++) _tp_filler_insert(&f, &fake[i]);
  _tp_filler_update(&f, &fake[0], 0, TP_SLOTS - 28, 1); /* 28 free */
  _tp_filler_update(&f, &fake[1], 0, TP_SLOTS - 12, 1); /* 12 free */
  _tp_filler_update(&f, &fake[2], 0, TP_SLOTS - 22, 1); /* 22 free */
  int slot = -1;
  cr_assert_eq(_tp_filler_pick(&f, 1, &slot), &fake[1]);
  cr_assert_eq(slot, TP_SLOTS - 12);
  /* A run that only the emptier pages can hold goes to the fullest of those. */
  cr_assert_eq(_tp_filler_pick(&f, 16, &slot), &fake[2]);
  cr_assert_eq(slot, TP_SLOTS - 22);
  cr_assert_eq(_tp_filler_pick(&f, 28, &slot), &fake[0]);
  cr_assert_null(_tp_filler_pick(&f, 29, &slot));
}

/* Idle groups' room (heap.c) picks among hpages within a band of use, skipping 4 KiB-backed
 * ones: the fullest in the band, none above max_used, none under min_used. */
Test(filler, picks_within_a_band_of_use_and_can_skip_4k_pages) {
  tp_filler_t f = {0};
  for (int i = 0; i < 4; i++) _tp_filler_insert(&f, &fake[i]);
  const int H = TP_SLOTS;
  _tp_filler_update(&f, &fake[0], 0, H - 28, 1); /* 28 free */
  _tp_filler_update(&f, &fake[1], 0, H - 6, 1);  /* 6 free: above the band */
  _tp_filler_update(&f, &fake[2], 0, H - 22, 1); /* 22 free */
  _tp_filler_update(&f, &fake[3], 0, H - 16, 1); /* 16 free, on 4 KiB pages */
  fake[3].source = TP_SRC_4K;
  int slot = -1;
  cr_assert_eq(_tp_filler_pick_within(&f, 1, 0, H - 9, 0, &slot), &fake[3]);
  cr_assert_eq(slot, H - 16);
  cr_assert_eq(_tp_filler_pick_within(&f, 1, 0, H - 9, 1, &slot), &fake[2], "a 4 KiB-backed page was picked");
  cr_assert_eq(slot, H - 22);
  cr_assert_eq(_tp_filler_pick_within(&f, 1, H - 21, H - 9, 1, &slot), NULL, "a page under min_used was picked");
  cr_assert_eq(_tp_filler_pick_within(&f, 1, 0, H - 23, 1, &slot), &fake[0], "a page over max_used was picked");
  cr_assert_eq(_tp_filler_pick_within(&f, 1, 0, H, 0, &slot), &fake[1]);
  cr_assert_null(_tp_filler_pick_within(&f, 29, 0, H, 0, &slot));
}

Test(filler, buckets_follow_slot_use_and_full_pages_are_skipped) {
  tp_filler_t f = {0};
  _tp_filler_insert(&f, &fake[0]);
  _tp_filler_insert(&f, &fake[1]);
  _tp_filler_update(&f, &fake[0], 0, TP_SLOTS, 1);
  cr_assert_eq(fake[0].nused, TP_SLOTS);
  int slot;
  cr_assert_eq(_tp_filler_pick(&f, 1, &slot), &fake[1]);
  _tp_filler_update(&f, &fake[0], 8, 2, 0);
  cr_assert_eq(fake[0].nused, TP_SLOTS - 2);
  cr_assert_eq(_tp_filler_pick(&f, 2, &slot), &fake[0]);
  cr_assert_eq(slot, 8);
  _tp_filler_remove(&f, &fake[1]);
  cr_assert_eq(f.hpages, 1);
}

/* The filler counts the slots used in its hpages (heap.c sums the holes from it). */
Test(filler, counts_the_slots_used_in_its_pages) {
  tp_filler_t f = {0};
  _tp_filler_update(&f, &fake[2], 0, 3, 1); /* not listed yet: not counted */
  cr_assert_eq(f.used, 0);
  _tp_filler_insert(&f, &fake[2]);
  cr_assert_eq(f.used, 3, "inserting a page with 3 slots used counts %zu", f.used);
  _tp_filler_insert(&f, &fake[0]);
  _tp_filler_update(&f, &fake[0], 0, 32, 1);
  _tp_filler_update(&f, &fake[0], 4, 2, 0);
  _tp_filler_update(&f, &fake[2], 2, 2, 1); /* slot 2 was used already: one more */
  cr_assert_eq(f.used, 30 + 4, "counts %zu", f.used);
  _tp_filler_remove(&f, &fake[0]);
  cr_assert_eq(f.used, 4, "after removing a page of 30: %zu", f.used);
}
