/* Unicode case data for Python-exact lowercasing (engine/eval/lowercase.c). The simple
 * mappings come from glibc's C.UTF-8 locale; these tables add the two classes of the
 * Final_Sigma rule, generated from CPython by tests/fixtures/metrics/make_case_tables.py. */
#ifndef MTLAB_EVAL_UNICODE_CASE_H
#define MTLAB_EVAL_UNICODE_CASE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t first, last; /* inclusive */
} mt_cp_range;

/* Whether c lies in one of the n ranges r, sorted and disjoint as the generated tables are. */
int mt_cp_in_ranges(const mt_cp_range *r, size_t n, uint32_t c);

extern const mt_cp_range mt_case_ignorable[];
extern const size_t mt_case_ignorable_count;
extern const mt_cp_range mt_cased[];
extern const size_t mt_cased_count;

#endif
