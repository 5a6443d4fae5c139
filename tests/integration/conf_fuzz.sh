#!/usr/bin/env bash
# conf_fuzz.sh [RANDOM_CASES [SEED]]: TLBPACK_CONF bad input from the outside (see conf_fuzz.py).
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_prog it_conf_probe
tp_need_cmd "$TP_PY"
n=${1:-150}; [ "$TP_STRESS" = 1 ] && n=3000
"$TP_PY" "$(dirname "$0")/conf_fuzz.py" "$TP_LIB" "$TP_BUILD_DIR/it_conf_probe" "$n" "${2:-1}" || tp_fail "see above"
tp_pass
