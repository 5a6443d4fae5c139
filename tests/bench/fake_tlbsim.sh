#!/bin/sh
# Stands in for build/tlbsim in the smoke test until the simulator is built: checks the
# arguments tlbbench passes and the trace header, and prints a JSON object of the contract's
# shape (DESIGN.md) with made-up but consistent numbers.
json=0; nested=0; trace=""; cpu=""
while [ $# -gt 0 ]; do
  case "$1" in
    --json) json=1 ;;
    --cpu) cpu=$2; shift ;;
    --smaps) [ -r "$2" ] || { echo "fake tlbsim: cannot read smaps $2" >&2; exit 2; }; shift ;;
    --nested) nested=1; shift ;;
    --warmup) [ "$2" = marker ] || { echo "fake tlbsim: --warmup $2" >&2; exit 2; }; shift ;;
    -*) echo "fake tlbsim: unexpected option $1" >&2; exit 2 ;;
    *) trace=$1 ;;
  esac
  shift
done
[ "$json" = 1 ] && [ -n "$cpu" ] || { echo "fake tlbsim: --json and --cpu expected" >&2; exit 2; }
[ "$(head -c 7 "$trace")" = "TLBPTRC" ] || { echo "fake tlbsim: $trace is not a binary trace" >&2; exit 2; }
n=$(( ($(stat -c %s "$trace") - 16) / 16 ))
refs=$(( n / 10 * (nested * 5 + 1) ))
echo "{\"accesses\": $n, \"l1_hits\": $((n - n/5)), \"l1_misses\": $((n/5)), \"l2_hits\": $((n/10)), \"l2_misses\": $((n/10)), \"walks\": $((n/10)), \"walk_levels\": $((n/10*4)), \"walk_mem_refs\": $refs, \"distinct_pages_4k\": 7, \"distinct_pages_2m\": 1, \"page_table_pages\": {\"pt\": 3, \"pd\": 1}}"
