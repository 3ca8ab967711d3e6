/* The spans mt_source_entities finds in a source, as "A|B|C" (test_entities.c without a
 * lexicon, test_entity_lexicon.c with one). */
#ifndef MTLAB_TEST_ENTITY_SPANS_H
#define MTLAB_TEST_ENTITY_SPANS_H

#include <stddef.h>

#include "mtlab/entities.h"

void test_detected_entities(char *out, size_t len, const char *src, const mt_entity_lexicon *l);

#endif
