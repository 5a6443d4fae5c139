#!/usr/bin/env bash
# libtlbpack.so exports exactly the documented API (tp_* of include/tlbpack.h) and the malloc
# family (plus C++ operator new/delete), and carries the soname libtlbpack.so.0.
# Usage: exports.sh LIBTLBPACK_SO TLBPACK_H
. "$(dirname "$0")/lib.sh"
LIB=$1 HDR=$2
[ -e "$LIB" ] || skip "$LIB not built (the allocator is not merged yet)"

api=$(grep -oE '\btp_[a-z0-9_]+[[:space:]]*\(' "$HDR" | tr -d '( \t' | sort -u)
[ -n "$api" ] || fail "no tp_ functions found in $HDR"
# glibc's own malloc-family names, which a preloaded malloc must also answer to (cfree and
# __libc_valloc/__libc_pvalloc are glibc exports like the other __libc_* ones).
malloc_names="malloc free calloc realloc reallocarray posix_memalign aligned_alloc memalign valloc
pvalloc malloc_usable_size cfree __libc_malloc __libc_free __libc_calloc __libc_realloc __libc_memalign
__libc_valloc __libc_pvalloc malloc_trim mallinfo mallinfo2 malloc_stats"
# The signal-mask calls that keep fork's stop signal deliverable (alloc/override.c).
malloc_names="$malloc_names pthread_sigmask sigprocmask sigsuspend sigwait sigwaitinfo sigtimedwait"

defined=$(nm -D --defined-only "$LIB" | awk '{print $NF, $(NF-1)}')
unexpected=""
while read -r sym type; do
  [ -n "$sym" ] || continue
  name=${sym%%@*}
  case "$type" in A) continue ;; esac                        # symbol-version definitions
  case "$name" in _init | _fini | _edata | _end | __bss_start) continue ;; esac   # linker-made
  case "$name" in _Znw* | _Zna* | _ZdlPv* | _ZdaPv*) continue ;; esac           # operator new/delete
  if printf '%s\n' $api $malloc_names | grep -qxF "$name"; then continue; fi
  unexpected="$unexpected $name"
done <<< "$defined"
if [ -n "$unexpected" ]; then
  fail "unexpected exported symbols (make them static or _tp_ with hidden visibility):$unexpected"
else
  ok "only documented API and malloc names exported ($(printf '%s\n' "$defined" | grep -c .) symbols)"
fi

missing=""
for f in $api malloc free calloc realloc posix_memalign aligned_alloc malloc_usable_size; do
  printf '%s\n' "$defined" | awk '{sub(/@.*/, "", $1); print $1}' | grep -qxF "$f" || missing="$missing $f"
done
[ -z "$missing" ] && ok "every documented function is exported" || fail "documented but not exported:$missing"

soname=$(readelf -d "$LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libtlbpack.so.0" ] && ok "soname $soname" || fail "soname is '$soname', expected libtlbpack.so.0"
needed=$(readelf -d "$LIB" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
case "$needed" in
  *libnuma*|*libhugetlbfs*) fail "libtlbpack.so links $needed: libnuma and libhugetlbfs are opened when first needed" ;;
  *) ok "needs only: $needed" ;;
esac
finish
