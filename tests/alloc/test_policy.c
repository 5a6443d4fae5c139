/* The placement and caching decisions (alloc/policy.c) as pure functions: no heap behind them. */
#include <criterion/criterion.h>

#include "internal.h"

Test(policy, a_site_that_does_most_refills_and_took_64_kib_grows_up) {
  uint64_t stamp = 0;
  uint32_t d = 0;
  for (int i = 0; i < 7; i++) d = _tp_policy_site_demand(d, &stamp, (uint64_t)i);
  cr_assert_not(_tp_policy_site_grows_up(d, 1 << 20), "7 refills (demand %u) are not yet enough", d);
  d = _tp_policy_site_demand(d, &stamp, 7);
  cr_assert(_tp_policy_site_grows_up(d, 64 << 10), "8 back-to-back refills and 64 KiB: demand %u", d);
  cr_assert_not(_tp_policy_site_grows_up(d, (64 << 10) - 1), "less than 64 KiB taken: still young");
}

Test(policy, a_site_refilling_once_in_a_while_stays_young_however_long_it_runs) {
  /* One refill in every 16 of the process: demand settles near 16 * 64 / 16 / ln 2. */
  uint64_t stamp = 0;
  uint32_t d = 0;
  for (uint64_t now = 0; now < 100000; now += 16) d = _tp_policy_site_demand(d, &stamp, now);
  cr_assert_not(_tp_policy_site_grows_up(d, (size_t)1 << 30), "a 1-in-16 site grew up (demand %u)", d);
  /* one in 4 does */
  d = 0, stamp = 0;
  for (uint64_t now = 0; now < 100000; now += 4) d = _tp_policy_site_demand(d, &stamp, now);
  cr_assert(_tp_policy_site_grows_up(d, (size_t)1 << 30), "a 1-in-4 site stayed young (demand %u)", d);
}

Test(policy, demand_halves_every_64_refills_of_the_process_and_vanishes) {
  uint64_t stamp = 0;
  uint32_t d = _tp_policy_site_demand(1024, &stamp, 64);
  cr_assert_eq(d, 512 + 16);
  cr_assert_eq(stamp, 64);
  d = _tp_policy_site_demand(1000, &stamp, 64 + 64 * 40);
  cr_assert_eq(d, 16, "after 40 half-lives only this refill counts: %u", d);
}

Test(policy, a_group_becomes_exclusive_at_exclusive_kb_except_under_group_none) {
  cr_assert_not(_tp_policy_exclusive(0, 255 << 10, 256 << 10, TP_GROUP_SITE, 0));
  cr_assert(_tp_policy_exclusive(0, 256 << 10, 256 << 10, TP_GROUP_SITE, 0));
  cr_assert_not(_tp_policy_exclusive(1, 1 << 20, 256 << 10, TP_GROUP_SITE, 0), "already exclusive");
  cr_assert_not(_tp_policy_exclusive(0, 1 << 30, 256 << 10, TP_GROUP_NONE, 0));
}

Test(policy, one_size_class_of_a_wrapper_site_waits_for_16_times_exclusive_kb) {
  cr_assert_not(_tp_policy_exclusive(0, 256 << 10, 256 << 10, TP_GROUP_SITE, 1));
  cr_assert_not(_tp_policy_exclusive(0, 1 << 20, 256 << 10, TP_GROUP_SITE, 1));
  cr_assert_not(_tp_policy_exclusive(0, (4 << 20) - 1, 256 << 10, TP_GROUP_SITE, 1));
  cr_assert(_tp_policy_exclusive(0, 4 << 20, 256 << 10, TP_GROUP_SITE, 1));
  cr_assert_not(_tp_policy_exclusive(0, 1 << 30, 256 << 10, TP_GROUP_NONE, 1));
}

Test(policy, a_hot_lane_keeps_empty_slabs_of_many_objects_up_to_keep_empty_bytes) {
  size_t slot = TP_SLOT, keep = TP_KEEP_EMPTY_BYTES / TP_SLOT;
  cr_assert_geq(keep, 2, "the bound keeps more than one slab of one slot");
  cr_assert_not(_tp_policy_release_empty_slab(0, slot, 4096, 1, 0), "the first empty slab of a hot lane is kept");
  cr_assert_not(_tp_policy_release_empty_slab(keep - 1, slot, 4096, 1, 0), "up to the bound");
  cr_assert(_tp_policy_release_empty_slab(keep, slot, 4096, 1, 0), "past the bound it goes back");
  cr_assert_not(_tp_policy_release_empty_slab(0, 2 * TP_KEEP_EMPTY_BYTES, 4096, 1, 0), "one is kept whatever its size");
  cr_assert(_tp_policy_release_empty_slab(1, 2 * TP_KEEP_EMPTY_BYTES, 4096, 1, 0), "but only one of that size");
  cr_assert(_tp_policy_release_empty_slab(0, slot, 4, 1, 0), "a few large objects per slab: not kept");
  cr_assert(_tp_policy_release_empty_slab(0, slot, 4096, 0, 0), "an idle bin keeps none");
  /* The group on 4 KiB pages keeps a hot lane's empty slabs of a few large blocks too (their
   * pages stay resident either way), up to TP_KEEP_EMPTY_4K_BYTES. */
  cr_assert_not(_tp_policy_release_empty_slab(0, 4 * slot, 1, 1, 1), "one block a slab, on 4 KiB pages: kept");
  cr_assert_not(_tp_policy_release_empty_slab(TP_KEEP_EMPTY_4K_BYTES / (4 * slot) - 1, 4 * slot, 1, 1, 1));
  cr_assert(_tp_policy_release_empty_slab(TP_KEEP_EMPTY_4K_BYTES / (4 * slot), 4 * slot, 1, 1, 1), "past the bound");
  cr_assert(_tp_policy_release_empty_slab(0, 4 * slot, 1, 0, 1), "an idle bin keeps none");
  cr_assert(_tp_policy_bin_hot(0, 100, 100 - TP_IDLE_REFILLS, 0));
  cr_assert_not(_tp_policy_bin_hot(0, 100, 100 - TP_IDLE_REFILLS - 1, 0), "not refilled for too long");
  cr_assert_not(_tp_policy_bin_hot(1, 100, 100, 0), "its thread exited");
  cr_assert_not(_tp_policy_bin_hot(0, 100, 100, 1), "joined another group");
}

Test(policy, under_group_thread_another_threads_group_is_not_cached) {
  cr_assert_eq(_tp_policy_tbin_limit(TP_GROUP_THREAD, 5, 5, 64), 64);
  cr_assert_eq(_tp_policy_tbin_limit(TP_GROUP_THREAD, 6, 5, 64), 0);
  cr_assert_eq(_tp_policy_tbin_limit(TP_GROUP_SITE, 6, 0, 64), 64);
}

Test(policy, adoption_needs_all_of_its_evidence) {
  size_t ex = 256 << 10, few = TP_ADOPT_FREE_BYTES - 1;
  cr_assert(_tp_policy_adopt_donor(1, 0, 32, 64, few, ex, ex, TP_IDLE_REFILLS + 1));
  cr_assert_not(_tp_policy_adopt_donor(0, 0, 32, 64, few, ex, ex, TP_IDLE_REFILLS + 1), "not another site group");
  cr_assert_not(_tp_policy_adopt_donor(1, 1, 32, 64, few, ex, ex, TP_IDLE_REFILLS + 1), "donor already joined one");
  cr_assert_not(_tp_policy_adopt_donor(1, 0, 31, 64, few, ex, ex, TP_IDLE_REFILLS + 1), "under half the cache");
  cr_assert(_tp_policy_adopt_donor(1, 0, 0, 64, TP_ADOPT_FREE_BYTES, ex, ex, TP_IDLE_REFILLS + 1),
            "the donor's freed blocks back in its slabs");
  cr_assert_not(_tp_policy_adopt_donor(1, 0, 32, 64, few, ex - 1, ex, TP_IDLE_REFILLS + 1), "donor holds little");
  cr_assert_not(_tp_policy_adopt_donor(1, 0, 32, 64, TP_ADOPT_FREE_BYTES, ex, ex, TP_IDLE_REFILLS), "donor still allocating");
  cr_assert_not(_tp_policy_adopt_donor(1, 0, 0, 0, TP_ADOPT_FREE_BYTES, ex, ex, TP_IDLE_REFILLS + 1), "class not cached");
}

Test(policy, realloc_keeps_a_small_block_only_within_its_size_class) {
  cr_assert(_tp_policy_realloc_keeps(1, 128, 128));
  cr_assert(_tp_policy_realloc_keeps(1, 128, 113), "113 bytes are still class 128");
  cr_assert_not(_tp_policy_realloc_keeps(1, 128, 104), "104 bytes are class 112: the block moves");
  cr_assert_not(_tp_policy_realloc_keeps(1, 128, 129), "growth moves");
  cr_assert(_tp_policy_realloc_keeps(1, 16, 1));
  cr_assert(_tp_policy_realloc_keeps(1, 16, 0));
  cr_assert(_tp_policy_realloc_keeps(0, 1 << 20, 600 << 10), "a medium block at least half used stays");
  cr_assert_not(_tp_policy_realloc_keeps(0, 1 << 20, 400 << 10));
}

Test(policy, a_site_borrows_the_shared_groups_holes_only_when_it_would_carve_a_slab) {
  /* nobj 585 (class 112), refills of 32 */
  cr_assert(_tp_policy_borrow_shared(0, 32, 2 * 585, 4, 585));
  cr_assert(_tp_policy_borrow_shared(31, 32, 2 * 585, 4, 585));
  cr_assert_not(_tp_policy_borrow_shared(32, 32, 2 * 585, 4, 585), "its own slabs can serve the refill");
  cr_assert_not(_tp_policy_borrow_shared(0, 32, 2 * 585 - 1, 4, 585), "less than two slabs of holes");
  cr_assert_not(_tp_policy_borrow_shared(0, 32, 2 * 585, 33, 585), "holes under a sixteenth of the room");
  cr_assert(_tp_policy_borrow_shared(0, 32, 2 * 585, 32, 585));
}

Test(policy, a_site_is_a_wrapper_when_it_spans_4_classes_and_256x_in_size) {
  uint64_t m = 0;
  size_t wrapper[] = {16, 48, 128, 4096};
  for (int i = 0; i < 4; i++) {
    cr_assert_not(_tp_wrapper_classes(m), "only %d classes", i);
    m |= (uint64_t)1 << _tp_class_of(wrapper[i]);
  }
  cr_assert(_tp_wrapper_classes(m), "16 B to 4 KiB over 4 classes: a wrapper");
  uint64_t value = 0; /* one call site whose size varies: 16 to 512 bytes, every class */
  for (size_t n = 16; n <= 512; n += 16) value |= (uint64_t)1 << _tp_class_of(n);
  cr_assert_not(_tp_wrapper_classes(value), "16-512 B is one site's band (32x), not a wrapper");
  for (size_t n = 528; n <= 1024; n += 16) value |= (uint64_t)1 << _tp_class_of(n);
  cr_assert_not(_tp_wrapper_classes(value), "16-1024 B (a table entry, churn-mt) is one site's band (64x)");
  cr_assert_not(_tp_wrapper_classes((uint64_t)1 << _tp_class_of(16) | (uint64_t)1 << _tp_class_of(65536)),
                "two classes, however far apart, are not enough");
}

Test(policy, site_class_keys_name_the_site_and_the_class_apart_from_the_whole_site) {
  uintptr_t ra = 0x7f1234567890;
  uintptr_t k = _tp_key_of(ra, 3);
  cr_assert_neq(k, ra);
  cr_assert_eq(_tp_key_site(k), ra);
  cr_assert_eq(_tp_key_class(k), 3);
  cr_assert_eq(_tp_key_class(ra), -1);
  cr_assert_neq(_tp_key_of(ra, 0), ra, "class 0 still differs from the whole site");
  for (unsigned c = 0; c < TP_NCLASSES; c++) cr_assert_eq(_tp_class_of(_tp_class_size(c)), c);
}

/* Slot counts are in TP_SLOTS (64 slots of 32 KiB); the bounds are in bytes. */
Test(policy, a_start_page_is_collapsed_when_3_4_touched_or_when_its_free_room_is_1_32_of_the_heap) {
  const unsigned H = TP_SLOTS, k = (unsigned)((768u << 10) / TP_SLOT); /* k slots: 768 KiB */
  size_t start = (size_t)8 << 20, slot = TP_SLOT;
  cr_assert(_tp_policy_promote_start(3 * H / 4, 3 * H / 4, start + (2u << 20), 0, 0));
  cr_assert(_tp_policy_promote_start(3 * H / 4, 3 * H / 4, start + (2u << 20), start, 0), "a 3/4 full page, whatever was added");
  cr_assert_not(_tp_policy_promote_start(3 * H / 4 - 1, 3 * H / 4 - 1, start + (2u << 20), 0, 0));
  cr_assert_not(_tp_policy_promote_start(H - k, H - k, k * slot * 32 - 1, 0, 0), "768 KiB free on a heap under 24 MiB");
  cr_assert(_tp_policy_promote_start(H - k, H - k, k * slot * 32, 0, 0), "768 KiB free on a 24 MiB heap");
  cr_assert_not(_tp_policy_promote_start(1, 1, (H - 1) * slot * 32 - 1, 0, 0));
  cr_assert(_tp_policy_promote_start(1, 1, (H - 1) * slot * 32, 0, 0), "a sparse page once the heap is 32x its room");
  cr_assert_not(_tp_policy_promote_start(0, 0, (size_t)1 << 40, 0, 0), "an empty one is not collapsed");
}

/* A page carved whole but barely touched has no free room, yet its collapse makes all of its
 * untouched slots resident: under a quarter touched, those are what the 1/32 bound counts
 * (zstd -T2: 3 of 64 slots touched on a heap of 26 MB in memory). From a quarter touched on,
 * the free room again. */
Test(policy, a_start_page_carved_whole_and_barely_touched_is_bounded_by_its_untouched_slots) {
  const unsigned H = TP_SLOTS;
  size_t slot = TP_SLOT, heap = (size_t)26 << 20;
  for (int shared = 0; shared <= 1; shared++) {
    cr_assert_not(_tp_policy_promote_start(H, 3, heap, 0, shared), "3 slots touched on a 26 MiB heap (shared %d)", shared);
    cr_assert_not(_tp_policy_promote_start(H, 3, (H - 3) * slot * 32 - 1, 0, shared));
    cr_assert(_tp_policy_promote_start(H, 3, (H - 3) * slot * 32, 0, shared), "61 untouched slots on a heap 32x them");
    cr_assert(_tp_policy_promote_start(H, H / 4, heap, 0, shared), "a quarter touched, no free room (shared %d)", shared);
  }
  cr_assert_not(_tp_policy_promote_start(H / 2, H / 4, heap, 0, 0), "an exclusive group's page with 1 MiB free");
}

/* A page the shared group owns, a quarter of it touched, is collapsed whatever its free room
 * (its room takes the shared group's next slabs, while an exclusive group's may never be
 * carved): only the eighth of the heap bounds it. The index workload's first page: 28 of 64
 * slots carved, 21 touched. */
Test(policy, a_shared_start_page_is_not_held_back_by_its_free_room) {
  const unsigned H = TP_SLOTS, carved = H * 7 / 16, touched = H / 3;
  size_t heap = (size_t)19 << 20, adds = (H - touched) * TP_SLOT;
  cr_assert_not(_tp_policy_promote_start(carved, touched, heap, 0, 0), "an exclusive group's page with 1.1 MiB free");
  cr_assert(_tp_policy_promote_start(carved, touched, heap, 0, 1));
  cr_assert(_tp_policy_promote_start(carved, touched, heap, heap / 8 - adds, 1), "the eighth, exactly");
  cr_assert_not(_tp_policy_promote_start(carved, touched, heap, heap / 8 - adds + 1, 1), "past the eighth");
  cr_assert_not(_tp_policy_promote_start(carved, 0, heap, 0, 1), "nothing touched");
  cr_assert_not(_tp_policy_promote_start(carved, H / 4 - 1, heap, 0, 1), "under a quarter touched: the room bound holds");
  cr_assert(_tp_policy_promote_start(carved, H / 4, heap, 0, 1), "a quarter touched");
  cr_assert_not(_tp_policy_promote_start(1, 1, heap, 0, 1), "one block on the shared group's page");
}

/* What a page holds is what the program touched: a page carved 3/4 but touched half is sparse,
 * and what its collapse adds (the untouched half) counts toward the eighth of the heap. */
Test(policy, a_start_page_carved_3_4_but_touched_half_is_collapsed_only_within_the_eighth) {
  const unsigned H = TP_SLOTS;
  size_t slot = TP_SLOT, heap = (size_t)32 << 20; /* 1/8: 4 MiB, 1/32: 1 MiB */
  cr_assert_not(_tp_policy_promote_start(3 * H / 4, H / 2, (size_t)8 << 20, 0, 0), "512 KiB free on an 8 MiB heap");
  cr_assert(_tp_policy_promote_start(3 * H / 4, H / 2, heap, 0, 0));
  cr_assert(_tp_policy_promote_start(3 * H / 4, H / 2, heap, heap / 8 - H / 2 * slot, 0), "the untouched half fits the eighth exactly");
  cr_assert_not(_tp_policy_promote_start(3 * H / 4, H / 2, heap, heap / 8 - H / 2 * slot + 1, 0), "past an eighth of the heap");
  cr_assert_not(_tp_policy_promote_start(3 * H / 4, 0, heap, 0, 0), "nothing touched");
}

/* Sparse collapses together add at most 1/8 of the heap's backed bytes: a heap of many groups
 * starts on many sparse pages. */
Test(policy, sparse_start_pages_collapsed_add_at_most_an_eighth_of_the_heap) {
  const unsigned H = TP_SLOTS;
  size_t slot = TP_SLOT, heap = (size_t)64 << 20, room = (H - H / 8) * slot; /* 1/8: 8 MiB, 1/32: 2 MiB */
  cr_assert(_tp_policy_promote_start(H / 8, H / 8, heap, 0, 0));
  cr_assert(_tp_policy_promote_start(H / 8, H / 8, heap, heap / 8 - room, 0), "7/8 of a page of room fits the eighth exactly");
  cr_assert_not(_tp_policy_promote_start(H / 8, H / 8, heap, heap / 8 - room + 1, 0), "past an eighth of the heap");
  cr_assert_not(_tp_policy_promote_start(H / 8, H / 8, heap, heap / 8, 0), "pages of 7/8 room already added");
}

Test(policy, a_start_page_holds_data_from_a_quarter_touched_or_an_eighth_that_is_half_of_what_is_carved) {
  const size_t H = TP_HPAGE;
  cr_assert(_tp_policy_start_holds_data(H / 4, H), "a quarter touched, whatever is carved");
  cr_assert_not(_tp_policy_start_holds_data(H / 4 - 1, H), "under a quarter, carved whole");
  cr_assert(_tp_policy_start_holds_data(H / 8, H / 4), "an eighth, half of what is carved");
  cr_assert_not(_tp_policy_start_holds_data(H / 8, H / 4 + 1), "an eighth, under half of what is carved");
  cr_assert_not(_tp_policy_start_holds_data(H / 8 - 1, 0), "under an eighth, nothing carved");
}

Test(policy, a_group_filled_its_start_page_at_3_4_touched_or_half_within_an_eighth_of_a_large_enough_heap) {
  const size_t H = TP_HPAGE;
  cr_assert(_tp_policy_start_filled(H, 0), "all of it touched");
  cr_assert(_tp_policy_start_filled(3 * H / 4, 0), "3/4 touched, in any heap");
  cr_assert_not(_tp_policy_start_filled(3 * H / 4 - 1, TP_GROW_HALF_BYTES - 1), "under 3/4, the heap under the half bound");
  cr_assert(_tp_policy_start_filled(H / 2, TP_GROW_HALF_BYTES), "half touched, its 1 MiB collapse an eighth of 8 MiB");
  cr_assert_not(_tp_policy_start_filled(H / 2 - 1, (size_t)1 << 30), "under half touched, however large the heap");
  cr_assert_not(_tp_policy_start_filled(H / 2, TP_GROW_HALF_BYTES - 1), "half touched, a heap under the half bound");
}

Test(policy, a_thread_shares_another_threads_slab_only_once_the_bin_has_2_partial_slabs) {
  cr_assert_not(_tp_policy_share_slab(0));
  cr_assert_not(_tp_policy_share_slab(1), "one partial slab of another thread: carve one's own");
  cr_assert(_tp_policy_share_slab(2));
}

Test(policy, only_a_non_explicit_exclusive_group_that_stopped_filling_lends_its_room) {
  cr_assert(_tp_policy_lend(0, 1, TP_LEND_REFILLS + 1));
  cr_assert_not(_tp_policy_lend(0, 1, TP_LEND_REFILLS), "refilled recently: still filling");
  cr_assert_not(_tp_policy_lend(1, 1, 1u << 30), "an explicit group's pages are its own");
  cr_assert_not(_tp_policy_lend(0, 0, 1u << 30), "a young group owns no pages");
}

Test(policy, other_groups_holes_are_filled_from_a_page_of_them_and_an_eighth_of_the_pages) {
  cr_assert(_tp_policy_fill_holes(TP_HPAGE, 8 * TP_HPAGE));
  cr_assert_not(_tp_policy_fill_holes(TP_HPAGE - TP_SLOT, 4 * TP_HPAGE), "under one page of holes");
  cr_assert_not(_tp_policy_fill_holes(TP_HPAGE, 9 * TP_HPAGE), "under an eighth of the pages");
  cr_assert(_tp_policy_fill_holes(10 * TP_HPAGE, 80 * TP_HPAGE));
}

Test(policy, a_bins_first_refills_are_slow_start_batches_then_the_classs_own) {
  /* no more than the bin has popped (at least one): 1, 1, 2, 4, then TP_SLOW_START_BATCH */
  unsigned expect[][2] = {{0, 1}, {1, 1}, {2, 2}, {4, 4}, {5, 5}, {8, TP_SLOW_START_BATCH}, {40, TP_SLOW_START_BATCH}};
  for (unsigned i = 0; i < sizeof expect / sizeof expect[0]; i++) {
    unsigned want = 32;
    cr_assert(_tp_policy_slow_start(expect[i][0], 64, &want), "pops %u", expect[i][0]);
    cr_assert_eq(want, expect[i][1], "pops %u: %u a refill, expected %u", expect[i][0], want, expect[i][1]);
  }
  unsigned want = 32;
  cr_assert(_tp_policy_slow_start(TP_SLOW_START_POPS - 1, 64, &want));
  cr_assert_eq(want, TP_SLOW_START_BATCH);
  want = 32;
  cr_assert_not(_tp_policy_slow_start(TP_SLOW_START_POPS, 64, &want));
  cr_assert_eq(want, 32, "past the slow start the class's batch: %u", want);
  want = 8; /* a class whose batch is that small already, once the bin has popped as many */
  cr_assert_not(_tp_policy_slow_start(8, 1024, &want));
  cr_assert_eq(want, 8);
}

Test(policy, a_kilobyte_bins_slow_start_refills_hold_a_few_kilobytes) {
  unsigned want = 8; /* the kilobyte classes' batch (tcache_cap 16) */
  cr_assert(_tp_policy_slow_start(20, 2048, &want));
  cr_assert_eq(want, TP_SLOW_START_BYTES / 2048);
  want = 8;
  cr_assert(_tp_policy_slow_start(20, 5120, &want));
  cr_assert_eq(want, 1, "5 KiB blocks: %u a refill", want);
  want = 2; /* the classes over 16 KiB (tcache_cap 4) */
  cr_assert(_tp_policy_slow_start(TP_SLOW_START_POPS - 1, 40960, &want));
  cr_assert_eq(want, 1, "a block larger than the slow start's bytes still comes: %u", want);
  want = 8;
  cr_assert_not(_tp_policy_slow_start(TP_SLOW_START_POPS, 5120, &want));
  cr_assert_eq(want, 8, "past the slow start the class's batch: %u", want);
}

Test(policy, a_young_sites_demand_counts_one_slow_start_refill_per_batch) {
  /* batches of 32: pops 0 and 32 start a batch's worth, 8, 16, 24, 40 ... do not */
  cr_assert(_tp_policy_slow_refill_counts(0, 64, 32));
  cr_assert_not(_tp_policy_slow_refill_counts(8, 64, 32));
  cr_assert_not(_tp_policy_slow_refill_counts(24, 64, 32));
  cr_assert(_tp_policy_slow_refill_counts(32, 64, 32));
  cr_assert_not(_tp_policy_slow_refill_counts(40, 64, 32));
  cr_assert(_tp_policy_slow_refill_counts(TP_SLOW_START_POPS + 8, 64, 32), "past the slow start every refill counts");
  cr_assert(_tp_policy_slow_refill_counts(8, 64, TP_SLOW_START_BATCH), "a class of small batches is never slowed");
  /* 5 KiB blocks one a refill, batches of 8: pops 0 and 8 count, 1-7 do not */
  cr_assert(_tp_policy_slow_refill_counts(0, 5120, 8));
  cr_assert_not(_tp_policy_slow_refill_counts(3, 5120, 8));
  cr_assert(_tp_policy_slow_refill_counts(8, 5120, 8));
}

Test(policy, realloc_out_of_a_wrappers_class_group_leaves_it) {
  unsigned c48 = _tp_class_of(48);
  cr_assert_not(_tp_policy_realloc_leaves_class_group(-1, 3000), "a whole site's group keeps its blocks");
  cr_assert_not(_tp_policy_realloc_leaves_class_group((int)c48, 40), "same class: no move to make");
  cr_assert(_tp_policy_realloc_leaves_class_group((int)c48, 64));
  cr_assert(_tp_policy_realloc_leaves_class_group((int)c48, 16), "shrunk into a smaller class");
  cr_assert(_tp_policy_realloc_leaves_class_group((int)c48, TP_SMALL_MAX + 1), "grown past the slab classes");
}

Test(policy, a_sites_second_medium_or_large_run_is_sampled_on_4k_pages_and_a_sparse_sites_every_one) {
  /* Never the first run (a table allocated once stays huge); the second; then powers of two
   * from 256. */
  cr_assert_not(_tp_policy_large_on_4k(2, 1, TP_LARGE_UNKNOWN, 1));
  cr_assert(_tp_policy_large_on_4k(2, 2, TP_LARGE_UNKNOWN, 1));
  cr_assert_not(_tp_policy_large_on_4k(2, 3, TP_LARGE_DENSE, 1));
  cr_assert_not(_tp_policy_large_on_4k(2, 4, TP_LARGE_DENSE, 1));
  cr_assert_not(_tp_policy_large_on_4k(2, 128, TP_LARGE_DENSE, 1));
  cr_assert(_tp_policy_large_on_4k(2, 256, TP_LARGE_DENSE, 1));
  cr_assert_not(_tp_policy_large_on_4k(2, 257, TP_LARGE_DENSE, 1));
  cr_assert(_tp_policy_large_on_4k(2, 1024, TP_LARGE_DENSE, 1));
  cr_assert(_tp_policy_large_on_4k(1, 3, TP_LARGE_SPARSE, 1));
  cr_assert(_tp_policy_large_on_4k(TP_SPARSE_MAX_HPAGES, 1, TP_LARGE_SPARSE, 1));
  cr_assert_not(_tp_policy_large_on_4k(TP_SPARSE_MAX_HPAGES + 1, 2, TP_LARGE_SPARSE, 1));
  cr_assert_not(_tp_policy_large_on_4k(2, 2, TP_LARGE_SPARSE, 0), "only under pool:auto");
}

/* Blocks of more than a slot up to the largest slab class are sampled like medium runs; a site
 * found sparse takes them from the group on 4 KiB pages, and is sampled again at its 256th,
 * 512th ... block. */
Test(policy, a_sites_blocks_of_a_few_slots_are_sampled_and_a_sparse_sites_come_from_4k_pages) {
  cr_assert_not(_tp_policy_slab_block_sampled(TP_SLOT), "a slot or less: never");
  cr_assert(_tp_policy_slab_block_sampled(TP_SLOT + 1));
  cr_assert(_tp_policy_slab_block_sampled(TP_SMALL_MAX));
  cr_assert_not(_tp_policy_slab_block_sampled(TP_SMALL_MAX + 1), "a medium run: sampled as one");
  cr_assert_eq(_tp_policy_slab_block_route(1, TP_LARGE_UNKNOWN), TP_ROUTE_SLAB, "the first block: slabs");
  cr_assert_eq(_tp_policy_slab_block_route(2, TP_LARGE_UNKNOWN), TP_ROUTE_SAMPLE, "the second: a sample");
  cr_assert_eq(_tp_policy_slab_block_route(3, TP_LARGE_UNKNOWN), TP_ROUTE_SLAB, "not measured yet: slabs");
  cr_assert_eq(_tp_policy_slab_block_route(3, TP_LARGE_DENSE), TP_ROUTE_SLAB);
  cr_assert_eq(_tp_policy_slab_block_route(256, TP_LARGE_DENSE), TP_ROUTE_SAMPLE);
  cr_assert_eq(_tp_policy_slab_block_route(3, TP_LARGE_SPARSE), TP_ROUTE_4K);
  cr_assert_eq(_tp_policy_slab_block_route(255, TP_LARGE_SPARSE), TP_ROUTE_4K);
  cr_assert_eq(_tp_policy_slab_block_route(256, TP_LARGE_SPARSE), TP_ROUTE_SAMPLE, "a sparse site seen again");
  cr_assert_eq(_tp_policy_slab_block_route(257, TP_LARGE_SPARSE), TP_ROUTE_4K);
  cr_assert_eq(_tp_policy_slab_block_route(1024, TP_LARGE_SPARSE), TP_ROUTE_SAMPLE);
}

Test(policy, a_run_is_sparse_when_huge_pages_would_hold_4_times_what_it_wrote) {
  size_t K = 1024, M = 1024 * K;
  /* Large: against the hpages it touched. */
  cr_assert(_tp_policy_large_sparse(300 * K, 1, 3 * M), "3 MiB, 300 KiB written");
  cr_assert(_tp_policy_large_sparse(TP_HPAGE / 4, 1, 3 * M));
  cr_assert_not(_tp_policy_large_sparse(TP_HPAGE / 4 + 4 * K, 1, 3 * M));
  cr_assert_not(_tp_policy_large_sparse(2900 * K, 2, 3 * M), "3 MiB, 2.9 MB written");
  cr_assert(_tp_policy_large_sparse(0, 0, 3 * M), "nothing written");
  /* Medium: against its own slots. */
  cr_assert(_tp_policy_large_sparse(52 * K, 1, 608 * K), "600 KiB, 50 KiB written");
  cr_assert_not(_tp_policy_large_sparse(500 * K, 1, 608 * K));
}
