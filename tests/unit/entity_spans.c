#include "entity_spans.h"

#include "test_util.h"

void test_detected_entities(char *out, size_t len, const char *src, const mt_entity_lexicon *l)
{
    mt_text_span *spans;
    size_t n;
    assert_int_equal(mt_source_entities(&spans, &n, src, l), 0);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%.*s", i ? "|" : "",
                 (int)(spans[i].end - spans[i].start), src + spans[i].start);
    }
    free(spans);
}
