/* tlbpack internal types and cross-file functions (_tp_ prefix), every layer's: for tests,
 * tools and fuzzers. Not installed. A file of alloc/ includes its own layer's header instead
 * (base.h describes the layers). */
#ifndef TP_INTERNAL_H
#define TP_INTERNAL_H

#include "front.h"

#endif
