/*
 * CInterlockContention — the C half of contention profiling (ilk_contention.h), a target of its
 * own so that builds without the package trait ContentionProfiling neither compile nor link it.
 */
#ifndef CINTERLOCKCONTENTION_H
#define CINTERLOCKCONTENTION_H

#include "ilk_contention.h"

#endif
