/* libFuzzer target for tokenizer.json (engine/tokenizer/hf_bpe*.c over jansson, PCRE2 and
 * utf8proc): any bytes give a tokenizer or one error line naming the file, never a crash; an
 * accepted tokenizer keeps its promises: look-ups by id and by text agree, encoding gives ids
 * of the vocabulary, and decoding them gives valid UTF-8. The input's tail after a NUL byte is
 * also encoded, so the fuzzer varies the text as well as the file.
 * Build and run: make fuzz (see the Makefile). */
#include "mtlab/error.h"
#include "mtlab/utf8.h"
#include "tokenizer/hf_bpe.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

static const char NAME[] = "fuzz/tokenizer.json";

static void check_text(const hf_bpe *t, const char *text, size_t len)
{
    if (mt_utf8_invalid_offset(text, len) < len) return;
    int V = hf_bpe_vocab_size(t);
    int *ids;
    size_t n;
    if (hf_bpe_encode(t, text, len, &ids, &n) != 0) {
        CHECK(strchr(mt_last_error(), '\n') == NULL);
        return;
    }
    for (size_t k = 0; k < n; k++)
        CHECK(ids[k] >= 0 && ids[k] < V && hf_bpe_id_to_piece(t, ids[k]));
    for (int skip = 0; skip < 2; skip++) {
        char *back = hf_bpe_decode(t, ids, n, skip);
        CHECK(back);
        CHECK(mt_utf8_invalid_offset(back, strlen(back)) == strlen(back));
        free(back);
    }
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t json_len = nul ? (size_t)(nul - data) : size;
    mt_clear_error();
    hf_bpe *t = hf_bpe_load_bytes(data, json_len, NAME);
    if (!t) {
        CHECK(strncmp(mt_last_error(), NAME, strlen(NAME)) == 0);
        CHECK(strchr(mt_last_error(), '\n') == NULL);
        return 0;
    }
    int V = hf_bpe_vocab_size(t);
    CHECK(V > 0);
    CHECK(hf_bpe_id_to_piece(t, -1) == NULL && hf_bpe_id_to_piece(t, V) == NULL);
    for (int id = 0; id < V && id < 256; id++) {
        const char *piece = hf_bpe_id_to_piece(t, id);
        if (piece) CHECK(hf_bpe_piece_to_id(t, piece) == id);
    }
    static const char *const texts[] = {
        "", "Hola, mundo.", "In the beginning God   created\n\n",
        "it's 12345 \xe2\x82\xac \xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x92\xbb",
        "e\xcc\x81 \xe4\xb8\xad\xe6\x96\x87 <|endoftext|>"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        check_text(t, texts[i], strlen(texts[i]));
    if (nul) check_text(t, (const char *)nul + 1, size - json_len - 1);
    int bad[2] = {0, V};
    CHECK(hf_bpe_decode(t, bad, 2, 0) == NULL);
    hf_bpe_free(t);
    return 0;
}
