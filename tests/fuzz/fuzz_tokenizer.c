/* libFuzzer target for tokenizer.model (engine/tokenizer/spm.cc over sentencepiece's protobuf
 * parser, and a tokenizer.json through the same entry point: fuzz_tokenizer_json.c fuzzes that
 * reader on its own): any bytes give a tokenizer or one error line naming the file, never a
 * crash or a C++ exception crossing into C; an accepted model keeps mtlab's promises (the
 * reserved ids for a sentencepiece model, look-ups by id and by piece agreeing) and encodes and
 * decodes text. Every fourth input also goes through mt_tokenizer_load from a file, which must
 * decide the same.
 * Build and run: make fuzz (see the Makefile). */
#include "mtlab/error.h"
#include "mtlab/tokenizer.h"
#include "tokenizer/hf_bpe.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"

static const char NAME[] = "fuzz/tokenizer.model";

static void check_model(const mt_tokenizer *tok, int json)
{
    int V = mt_tokenizer_vocab_size(tok);
    CHECK(json ? V > 0 : V > MT_UNK_ID);
    CHECK(mt_tokenizer_id_to_piece(tok, -1) == NULL && mt_tokenizer_id_to_piece(tok, V) == NULL);
    for (int id = 0; id < V && id < 64; id++) {
        const char *piece = mt_tokenizer_id_to_piece(tok, id);
        CHECK(piece);
        int back = mt_tokenizer_piece_to_id(tok, piece);
        CHECK(back >= 0 && back < V);
    }
    static const char *const texts[] = {"", "Hola, mundo.",
                                        "En el principio creó Dios los cielos y la tierra.",
                                        "<sep> <eos> ñ \xe2\x82\xac 12345"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int *ids;
        size_t n;
        if (mt_tokenizer_encode(tok, texts[i], &ids, &n) != 0) {
            CHECK(strchr(mt_last_error(), '\n') == NULL);
            continue;
        }
        for (size_t k = 0; k < n; k++) CHECK(ids[k] >= 0 && ids[k] < V);
        char *text = mt_tokenizer_decode(tok, ids, n);
        if (!text) CHECK(strchr(mt_last_error(), '\n') == NULL);
        free(text);
        free(ids);
    }
    int bad[2] = {0, V};
    CHECK(mt_tokenizer_decode(tok, bad, 2) == NULL);
}

static int via_file(const uint8_t *data, size_t size)
{
    char path[96];
    fuzz_scratch_path(path, sizeof path, "mtlab-fuzz-", ".model");
    fuzz_write_file(path, data, size);
    mt_clear_error();
    mt_tokenizer *tok = mt_tokenizer_load(path);
    if (!tok) {
        CHECK(strstr(mt_last_error(), path) == mt_last_error());
        CHECK(strchr(mt_last_error(), '\n') == NULL);
    }
    mt_tokenizer_free(tok);
    unlink(path);
    return tok != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_clear_error();
    mt_tokenizer *tok = mt_tokenizer_load_bytes(data, size, NAME);
    if (!tok) {
        CHECK(strncmp(mt_last_error(), NAME, strlen(NAME)) == 0);
        CHECK(strchr(mt_last_error(), '\n') == NULL);
    } else {
        check_model(tok, hf_bpe_is_json(data, size));
    }
    if (size % 4 == 0) CHECK(via_file(data, size) == (tok != NULL));
    mt_tokenizer_free(tok);
    return 0;
}
