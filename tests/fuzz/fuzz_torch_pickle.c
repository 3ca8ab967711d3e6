/* libFuzzer target for the PyTorch checkpoint reader. An input starting with "PK" or with the
 * legacy format's magic number is a whole checkpoint (a zip archive through libzip, or the
 * legacy pickles and storages); any other input is data.pkl alone, its
 * storages made up here: keys "0" to "63" of up to 4096 bytes exist, with whatever size
 * data.pkl gives them, so that mutations reach the tensor checks instead of dying on a CRC.
 * Any input must give a handle or one error line naming the file, never a crash, a leak or an
 * out-of-bounds read; an accepted state_dict must keep the safetensors handle's promises.
 * Build and run: make fuzz (see the Makefile). */
#include "io/torch_pickle.h"
#include "mtlab/error.h"
#include "mtlab/safetensors.h"
#include "mtlab/torch_checkpoint.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

static const char NAME[] = "fuzz.bin";

enum { MAX_STORAGE = 4096 };

static int fuzz_check(void *ctx, const char *key, size_t nbytes)
{
    (void)ctx;
    char *end;
    long k = strtol(key, &end, 10);
    if (!*key || *end || k < 0 || k > 63) return mt_error("storage '%s': none such", key);
    if (nbytes > MAX_STORAGE)
        return mt_error("storage '%s': %zu bytes is more than the fuzzer makes", key, nbytes);
    return 0;
}

static int fuzz_load(void *ctx, const char *key, size_t nbytes, unsigned char **data)
{
    if (fuzz_check(ctx, key, nbytes)) return -1;
    *data = malloc(nbytes ? nbytes : 1);
    for (size_t i = 0; i < nbytes; i++) (*data)[i] = (unsigned char)(i * 31 + 7);
    return 0;
}

static const torch_storages STORAGES = {fuzz_check, fuzz_load, NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_clear_error();
    int whole = (size >= 2 && data[0] == 'P' && data[1] == 'K') || torch_legacy_magic(data, size);
    mt_safetensors *st = whole ? mt_torch_open_buffer(data, size, NAME)
                               : torch_read_state_dict(data, size, NAME, &STORAGES);
    if (!st) {
        const char *msg = mt_last_error();
        if (strncmp(msg, NAME, strlen(NAME)) != 0 || strchr(msg, '\n'))
            fprintf(stderr, "message: %s\n", msg);
        CHECK(strncmp(msg, NAME, strlen(NAME)) == 0);
        CHECK(strchr(msg, '\n') == NULL);
        return 0;
    }
    CHECK(strcmp(mt_st_name(st), NAME) == 0);
    for (int i = 0; i < mt_st_count(st); i++) {
        const mt_st_tensor *t = mt_st_tensor_at(st, i);
        if (i > 0) CHECK(strcmp(mt_st_tensor_at(st, i - 1)->name, t->name) < 0);
        CHECK(mt_st_find(st, t->name) == t);
        CHECK(t->nbytes == t->numel * mt_dtype_size(t->dtype));
        CHECK(t->nbytes <= 8 * MAX_STORAGE * 64 || whole);
        float *f = malloc((t->numel ? t->numel : 1) * sizeof *f);
        mt_st_tensor_to_f32(t, f);
        free(f);
    }
    mt_st_close(st);
    return 0;
}
