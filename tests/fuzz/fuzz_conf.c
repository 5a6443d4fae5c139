/* TLBPACK_CONF parser fuzz target for scripts/fuzz.sh; the target itself is conf/fuzz_conf.c. */
#include "conf/fuzz_conf.c"
