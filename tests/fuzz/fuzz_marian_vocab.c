/* libFuzzer target for an opus-mt checkpoint's vocabularies (engine/tokenizer/marian_vocab.cc):
 * the input is written into a scratch model directory beside the fixture's real source.spm and
 * target.spm, split at NUL bytes (which JSON text cannot hold) into
 *     vocab.json [NUL target_vocab.json [NUL tokenizer_config.json]]
 * (a part that is absent is no file), and the directory goes through mt_tokenizer_load. Any
 * bytes give a tokenizer or one error line naming the directory's file, never a crash; an
 * accepted vocabulary keeps its promises: </s>, <pad> and <unk> are its own pieces, look-ups by
 * id and by piece agree, encoding gives ids of the vocabulary and decoding takes them back.
 * Run from the repository root (the spm models come from tests/fixtures/marian/opus-mt-tiny).
 * Build and run: make fuzz (see the Makefile). */
#include "mtlab/error.h"
#include "mtlab/tokenizer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"

static const char FIXTURE[] = "tests/fixtures/marian/opus-mt-tiny";
static const char *const MEMBERS[] = {"vocab.json", "target_vocab.json", "tokenizer_config.json"};

static void copy_fixture(const char *dir, const char *name)
{
    char from[256], to[256];
    snprintf(from, sizeof from, "%s/%s", FIXTURE, name);
    snprintf(to, sizeof to, "%s/%s", dir, name);
    size_t len;
    char *bytes = fuzz_read_file(from, &len);
    if (!bytes) {
        fprintf(stderr, "fuzz_marian_vocab: cannot read %s (run from the repository root)\n", from);
        abort();
    }
    fuzz_write_file(to, bytes, len);
    free(bytes);
}

static void check_vocab(const mt_tokenizer *tok)
{
    int V = mt_tokenizer_vocab_size(tok);
    CHECK(V >= 3);
    CHECK(mt_tokenizer_id_to_piece(tok, -1) == NULL && mt_tokenizer_id_to_piece(tok, V) == NULL);
    static const char *const specials[] = {"</s>", "<pad>", "<unk>"};
    static const mt_token_role roles[] = {MT_ROLE_EOS, MT_ROLE_PAD, MT_ROLE_UNK};
    for (int k = 0; k < 3; k++) {
        int id = mt_tokenizer_special_id(tok, roles[k]);
        CHECK(id >= 0 && id < V && strcmp(mt_tokenizer_id_to_piece(tok, id), specials[k]) == 0);
    }
    for (int id = 0; id < V && id < 256; id++) {
        const char *piece = mt_tokenizer_id_to_piece(tok, id);
        CHECK(piece && mt_tokenizer_piece_to_id(tok, piece) == id);
    }
    static const char *const texts[] = {
        "",       "Hola, mundo.", ">>en<< En el principio creó Dios",
        ">>es<<", ">><<",         "ñ \xe2\x82\xac 12345 </s> <pad>"};
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[96];
    if (!dir[0]) {
        fuzz_scratch_dir(dir, sizeof dir, "mtlab-fuzz-marian-");
        copy_fixture(dir, "source.spm");
        copy_fixture(dir, "target.spm");
    }
    const uint8_t *part = data, *end = data + size;
    for (size_t m = 0; m < sizeof MEMBERS / sizeof MEMBERS[0]; m++) {
        char path[160];
        snprintf(path, sizeof path, "%s/%s", dir, MEMBERS[m]);
        if (part) {
            const uint8_t *nul = memchr(part, 0, (size_t)(end - part));
            const uint8_t *stop = nul ? nul : end;
            fuzz_write_file(path, part, (size_t)(stop - part));
            part = nul ? nul + 1 : NULL;
        } else {
            unlink(path);
        }
    }
    mt_clear_error();
    mt_tokenizer *tok = mt_tokenizer_load(dir);
    if (!tok) {
        CHECK(strncmp(mt_last_error(), dir, strlen(dir)) == 0);
        CHECK(strchr(mt_last_error(), '\n') == NULL);
    } else {
        check_vocab(tok);
    }
    mt_tokenizer_free(tok);
    return 0;
}
