/* libFuzzer target for the entity lexicon a bundle ships (entity_lexicon.tsv, read by
 * mt_entity_lexicon_read): any file gives a lexicon or one error line naming the file; an
 * accepted lexicon answers look-ups for its own names and words, and survives a write + re-read
 * with the same names, forms, pairs and words.
 * Build and run: make fuzz (see the Makefile). */
#include "mtlab/entities.h"
#include "mtlab/error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"

static char path[96], again_path[104];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        fuzz_scratch_path(path, sizeof path, "mtlab-fuzz-lexicon-", ".tsv");
        snprintf(again_path, sizeof again_path, "%s.again", path);
    }
    fuzz_write_file(path, data, size);
    mt_clear_error();
    mt_entity_lexicon *l = mt_entity_lexicon_read(path);
    if (!l) {
        CHECK(strstr(mt_last_error(), path) == mt_last_error());
        CHECK(strchr(mt_last_error(), '\n') == NULL);
        return 0;
    }
    /* written back, it reads back the same, and writes the same bytes again */
    if (mt_entity_lexicon_write(l, again_path) != 0) {
        fprintf(stderr, "write failed: %s\n", mt_last_error());
        CHECK(0);
    }
    mt_entity_lexicon *back = mt_entity_lexicon_read(again_path);
    if (!back) fprintf(stderr, "re-read failed: %s\n", mt_last_error());
    CHECK(back);
    CHECK(mt_entity_lexicon_pairs(back) == mt_entity_lexicon_pairs(l));
    CHECK(mt_entity_lexicon_names(back) == mt_entity_lexicon_names(l));
    CHECK(mt_entity_lexicon_words(back) == mt_entity_lexicon_words(l));
    size_t n1, n2;
    char *text1 = fuzz_read_file(again_path, &n1);
    CHECK(text1 && mt_entity_lexicon_write(back, again_path) == 0);
    char *text2 = fuzz_read_file(again_path, &n2);
    CHECK(text2);
    CHECK(n1 == n2 && memcmp(text1, text2, n1) == 0);
    /* every name line of the written file is a name with those forms in both */
    char *line = text1;
    while (line < text1 + n1) {
        char *nl = memchr(line, '\n', (size_t)(text1 + n1 - line));
        CHECK(nl);
        *nl = '\0';
        char *tab = strchr(line, '\t');
        if (line[0] != '#' && tab) {
            const char *const *forms;
            const double *dice;
            const size_t *pairs;
            size_t len = (size_t)(tab - line);
            CHECK(mt_entity_lexicon_is_name(l, line, len) &&
                  mt_entity_lexicon_is_name(back, line, len));
            size_t nf = mt_entity_lexicon_forms(l, line, len, &forms, &dice, &pairs);
            CHECK(nf == mt_entity_lexicon_forms(back, line, len, &forms, &dice, &pairs));
            for (size_t k = 0; k < nf; k++) CHECK(dice[k] >= 0 && dice[k] <= 1 && pairs[k] >= 1);
        } else if (line[0] != '#') {
            CHECK(mt_entity_lexicon_is_word(l, line, strlen(line)));
        }
        line = nl + 1;
    }
    free(text1);
    free(text2);
    mt_entity_lexicon_free(back);
    mt_entity_lexicon_free(l);
    unlink(again_path);
    return 0;
}
