#!/usr/bin/env bash
# numa:local binds tlbpack's pages preferred to the thread's node, numa:interleave interleaves
# them, numa:off leaves the kernel's default; checked with get_mempolicy on a real block.
set -u
lib=$1 prog=$2
out=$(TLBPACK_CONF=stats:1 LD_PRELOAD="$lib" "$prog" 2>&1)
if echo "$out" | grep -q "libnuma reports no NUMA support"; then
  echo "$out"; echo "SKIP: no NUMA support here: tlbpack degraded to numa:off and said so"; exit 77
fi
fail=0
check() {
  got=$(TLBPACK_CONF="numa:$1" LD_PRELOAD="$lib" "$prog" 2>&1 | sed -n 's/^policy=//p')
  echo "numa:$1 -> $got"
  [ "$got" = "$2" ] || { echo "FAIL: numa:$1 gave policy '$got', expected '$2'"; fail=1; }
}
check local preferred
check interleave interleave
check off default
exit $fail
