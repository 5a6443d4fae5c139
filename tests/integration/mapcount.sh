#!/usr/bin/env bash
# A pool-backed heap of several GiB with vm.max_map_count lowered to 1000 (where one mapping
# per 2 MiB page would end the heap below 2 GiB): every malloc succeeds and the mappings stay
# within one per GiB plus a constant, also after freeing most and allocating again
# (tests/integration/mapcount.c); then, with every descriptor closed and reused by the
# program, another GiB still comes from the pool. Needs root (both knobs are system-wide: they are restored at
# once) and memory for the pool pages; a skip says which is missing.
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_prog it_mapcount
tp_is_tlbpack || tp_skip "$TP_LIB is not tlbpack: its mapping count is not what this test checks"
[ "$(id -u)" = 0 ] || tp_skip "needs root to lower vm.max_map_count and grow the hugetlbfs pool"
mib=${TP_MAPCOUNT_MIB:-4096}
[ "$TP_STRESS" = 1 ] && mib=8192
need=$(( mib / 2 + 640 ))  # the heap, then 1100 MiB more after the descriptors are closed
avail_kb=$(awk '$1 == "MemAvailable:" {print $2}' /proc/meminfo)
[ "$avail_kb" -ge $(( (need * 2 + 4096) * 1024 )) ] ||
  tp_skip "needs $need free 2 MiB pool pages plus 4 GiB to spare; MemAvailable is $((avail_kb / 1024)) MiB"
maps_knob=/proc/sys/vm/max_map_count pool_knob=/proc/sys/vm/nr_hugepages
maps_orig=$(cat $maps_knob) pool_orig=$(cat $pool_knob)
TP_CLEANUP+=('echo $maps_orig > $maps_knob; echo $pool_orig > $pool_knob')  # lib.sh's EXIT trap runs it
free0=$(awk '$1 == "HugePages_Free:" {print $2}' /proc/meminfo)
[ "$free0" -ge "$need" ] || echo $(( pool_orig + need - free0 + 32 )) > $pool_knob  # others may take some meanwhile
free1=$(awk '$1 == "HugePages_Free:" {print $2}' /proc/meminfo)
[ "$free1" -ge "$need" ] || tp_skip "the kernel granted $free1 free pool pages of the $need asked for (memory fragmented?)"
tp_mktemp
echo 1000 > $maps_knob
TLBPACK_CONF=$TP_CONF,pool:hugetlbfs,start_kb:0 LD_PRELOAD=$TP_LIB "$TP_BUILD_DIR/it_mapcount" $mib 2 64 "$TP_TMP/own" >"$TP_TMP/out" 2>"$TP_TMP/err"
rc=$?
echo $maps_orig > $maps_knob
echo $pool_orig > $pool_knob
cat "$TP_TMP/out" >&2
grep -E 'pages_hugetlbfs|hugetlb_|mappings' "$TP_TMP/err" >&2
[ $rc = 0 ] || tp_fail "it_mapcount exited with status $rc (max_map_count was 1000)"
pages=$(sed -n 's/^mapcount: grow: .*hugetlbfs pages \([0-9]*\)$/\1/p' "$TP_TMP/out")
[ "${pages:-0}" -ge $(( mib / 2 * 9 / 10 )) ] || tp_fail "the heap held ${pages:-0} pool pages for $mib MiB: not the pool-backed heap this test is about"
tp_pass "$mib MiB on $pages pool pages within the mapping bound (max_map_count 1000)"
