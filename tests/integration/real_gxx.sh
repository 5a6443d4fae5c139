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
TLBPACK_CONF=$TP_CONF tp_pre g++ $opt -c "$src" -o pre.o 2>pre.err || { cat pre.err >&2; tp_fail "g++ under $TP_LIB failed"; }
tp_strip_stats pre.err >pre.err.filtered
cmp -s plain.err pre.err.filtered || { diff plain.err pre.err.filtered >&2; tp_fail "g++ printed different diagnostics under preload"; }
# as keeps every section of the object in memory (obstack chunks from malloc) until it writes
# the file: at least the object file's size.
tp_check_stats pre.err "g++ (compile)" "$(stat -c %s pre.o)"
cmp -s plain.o pre.o || tp_fail "object code differs between plain g++ and g++ under preload"
g++ -pthread plain.o -o plain.prog 2>plain.link.err || tp_fail "plain link failed: $(cat plain.link.err)"
TLBPACK_CONF=$TP_CONF tp_pre g++ -pthread pre.o -o prog 2>link.err || { cat link.err >&2; tp_fail "linking under $TP_LIB failed"; }
tp_strip_stats link.err >link.err.filtered
cmp -s plain.link.err link.err.filtered || { diff plain.link.err link.err.filtered >&2; tp_fail "the link printed different diagnostics under preload"; }
# ld reads its inputs' sections and lays out the output in memory: at least the program's size.
tp_check_stats link.err "g++ (link)" "$(stat -c %s prog)"

# stdout and stderr apart in both runs, each compared (stats stripped from the preloaded one).
./prog >plain.out 2>plain.prog.err || tp_fail "the C++ program failed without preload: $(cat plain.prog.err)"
TLBPACK_CONF=$TP_CONF tp_pre ./prog >pre.out 2>prog.err || { cat prog.err >&2; tp_fail "the C++ program failed under $TP_LIB"; }
cmp -s plain.out pre.out || { diff plain.out pre.out >&2; tp_fail "the C++ program's output differs under preload"; }
tp_strip_stats prog.err >prog.err.filtered
cmp -s plain.prog.err prog.err.filtered || { diff plain.prog.err prog.err.filtered >&2; tp_fail "the C++ program's stderr differs under preload"; }
# Each of its 4 threads fills an unordered_map with 25001 keys; a node holds a std::string, a
# std::vector<int>, a next pointer and the hash: 72 bytes, so 64 is a floor.
tp_check_stats prog.err "the C++ program" $((4 * 25001 * 64))
tp_pass "identical object code ($(stat -c %s pre.o) bytes), diagnostics and output: $(tail -1 pre.out)"
