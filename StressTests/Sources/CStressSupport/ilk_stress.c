// The C target needs one source file; everything is inline in include/ilk_stress.h.
