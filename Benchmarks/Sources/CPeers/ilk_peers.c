/* CPeers is header-only (static inline); SwiftPM needs one source file to build the target. */
#include "CPeers.h"
