#!/usr/bin/env bash
# g++ (and the cc1plus/as/ld it runs) compiling a small C++ program under the preloaded allocator:
# the object code must be identical to a plain compile, and the program itself, run under the
# allocator, must print what it prints without it.
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_cmd g++ cmp
tp_mktemp
src=$(cd "$(dirname "$0")" && pwd)/cxx_prog.cpp
cd "$TP_TMP" || exit 1
opt="-O2 -g -pthread"

g++ $opt -c "$src" -o plain.o 2>plain.err || tp_fail "plain g++ failed: $(cat plain.err)"
TLBPACK_CONF=stats:1 tp_pre g++ $opt -c "$src" -o pre.o 2>pre.err || { cat pre.err >&2; tp_fail "g++ under $TP_LIB failed"; }
[ -z "$(tp_strip_stats pre.err)" ] || { cat pre.err >&2; tp_fail "g++ printed diagnostics under preload only"; }
tp_check_stats pre.err "g++ (compile)"
cmp -s plain.o pre.o || tp_fail "object code differs between plain g++ and g++ under preload"
TLBPACK_CONF=stats:1 tp_pre g++ -pthread pre.o -o prog 2>link.err || { cat link.err >&2; tp_fail "linking under $TP_LIB failed"; }
tp_check_stats link.err "g++ (link)"

./prog >plain.out 2>&1 || tp_fail "the C++ program failed without preload"
TLBPACK_CONF=stats:1 tp_pre ./prog >pre.out 2>prog.err || { cat prog.err >&2; tp_fail "the C++ program failed under $TP_LIB"; }
cmp -s plain.out pre.out || { diff plain.out pre.out >&2; tp_fail "the C++ program's output differs under preload"; }
tp_check_stats prog.err "the C++ program"
tp_pass "identical object code ($(stat -c %s pre.o) bytes) and output: $(tail -1 pre.out)"
