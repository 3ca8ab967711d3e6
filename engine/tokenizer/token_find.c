/* mt_tokenizer_find_token (mtlab/tokenizer.h): the token a person names by typing it, for a
 * contrast on the command line, in Lua and in the workbench alike. */
#include "tokenizer/token_find.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"
#include "mtlab/tokenizer.h"

/* The id whose piece is exactly piece, else -1 (sentencepiece answers <unk> for any unknown). */
static int spelled(const mt_tokenizer *tok, const char *piece)
{
    int id = mt_tokenizer_piece_to_id(tok, piece);
    const char *known = id >= 0 ? mt_tokenizer_id_to_piece(tok, id) : NULL;
    return known && !strcmp(known, piece) ? id : -1;
}

int mt_tokenizer_find_token(const mt_tokenizer *tok, const char *text)
{
    if (!text[0]) return mt_error("'' is no token of this vocabulary");
    char label[256];
    int id = spelled(tok, text);
    /* a piece that stands for part of a character (labelled <0xE1>) is not what a text that
     * reads as characters means */
    if (id >= 0) {
        mt_tokenizer_label(tok, id, label, sizeof label);
        if (!strstr(label, "<0x") || !strcmp(label, text)) return id;
    }
    char *word = mt_tokenizer_word_start_piece(tok, text);
    id = spelled(tok, word);
    free(word);
    if (id >= 0) return id;
    int n_vocab = mt_tokenizer_vocab_size(tok);
    for (id = 0; id < n_vocab; id++)
        if (!strcmp(mt_tokenizer_label(tok, id, label, sizeof label), text)) return id;
    int *ids = NULL;
    size_t n = 0;
    if (mt_tokenizer_encode(tok, text, &ids, &n) < 0) return -1;
    if (n == 1) {
        id = ids[0];
        free(ids);
        return id;
    }
    char pieces[512] = "";
    for (size_t i = 0, used = 0; i < n && used < sizeof pieces; i++) {
        const char *piece = mt_tokenizer_id_to_piece(tok, ids[i]);
        used += (size_t)snprintf(pieces + used, sizeof pieces - used, "%s%s", i ? " " : "",
                                 piece ? piece : "?");
    }
    free(ids);
    return mt_error("'%s' is %zu tokens (%s), not one token of this vocabulary", text, n, pieces);
}
