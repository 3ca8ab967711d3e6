/* A decoder-only model's prompt template (docs/bundles.md §2.4): the source text put in for
 * {src} and the whole encoded at once, as decoding (mt_source_encode) and training (the
 * corpus of a finetune) both take it. */
#include "mtlab/error.h"
#include "mtlab/tokenizer.h"

#include <stdlib.h>
#include <string.h>

int mt_prompt_encode(const mt_tokenizer *tok, const char *prompt, const char *text, int **ids,
                     size_t *n)
{
    const char *at = prompt && prompt[0] ? strstr(prompt, "{src}") : NULL;
    if (!at) return mt_tokenizer_encode(tok, text, ids, n);
    size_t before = (size_t)(at - prompt), len = strlen(text), after = strlen(at + 5);
    char *full = mt_xmalloc(before + len + after + 1);
    memcpy(full, prompt, before);
    memcpy(full + before, text, len);
    memcpy(full + before + len, at + 5, after + 1);
    int rc = mt_tokenizer_encode(tok, full, ids, n);
    free(full);
    return rc;
}
