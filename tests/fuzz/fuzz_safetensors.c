/* libFuzzer target for the safetensors reader (and, for inputs it accepts, the writer).
 * Any input must give a handle or one error line naming the buffer, never a crash or an
 * out-of-bounds read; an accepted file must keep the reader's promises (every tensor inside
 * the data section, look-ups consistent) and survive a write + re-read unchanged.
 * Build and run: make fuzz (see the Makefile). */
#include "mtlab/error.h"
#include "mtlab/safetensors.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"

static const char NAME[] = "fuzz.safetensors";

/* Conversions of big tensors only repeat the same code; keep each run fast. */
enum { MAX_CONVERT = 1 << 16 };

static void check_tensor(const mt_safetensors *st, const mt_st_tensor *t, const uint8_t *data,
                         size_t size)
{
    CHECK(mt_st_find(st, t->name) == t);
    CHECK(t->nbytes == t->numel * mt_dtype_size(t->dtype));
    const uint8_t *p = t->data;
    CHECK(p >= data + 8 && p + t->nbytes <= data + size);
    CHECK(t->ndim >= 0 && t->ndim <= MT_ST_MAX_DIMS);
    if (t->numel > MAX_CONVERT) return;
    float *f = malloc((t->numel ? t->numel : 1) * sizeof *f);
    void *raw = malloc(t->nbytes ? t->nbytes : 1);
    mt_st_tensor_to_f32(t, f);
    if (mt_dtype_is_float(t->dtype)) CHECK(mt_st_read_f32(st, t->name, t->ndim, t->shape, f) == 0);
    CHECK(mt_st_read_raw(st, t->name, t->dtype, t->ndim, t->shape, raw) == 0);
    CHECK(t->nbytes == 0 || memcmp(raw, t->data, t->nbytes) == 0);
    int64_t wrong[MT_ST_MAX_DIMS + 1] = {0};
    memcpy(wrong, t->shape, sizeof t->shape);
    wrong[0] ^= 1;
    CHECK(mt_st_read_raw(st, t->name, t->dtype, t->ndim + (t->ndim == 0), wrong, raw) == -1);
    free(f);
    free(raw);
}

/* Writes every tensor back raw (with the metadata) and checks the re-read file holds the same. */
static void check_rewrite(const mt_safetensors *st)
{
    int n = mt_st_count(st), n_meta = mt_st_metadata_count(st);
    mt_st_write_tensor *w = calloc((size_t)n + 1, sizeof *w);
    mt_st_meta *meta = calloc((size_t)n_meta + 1, sizeof *meta);
    for (int i = 0; i < n; i++) {
        const mt_st_tensor *t = mt_st_tensor_at(st, i);
        w[i] = (mt_st_write_tensor){
            .name = t->name, .dtype = t->dtype, .ndim = t->ndim, .raw = t->data};
        memcpy(w[i].shape, t->shape, sizeof t->shape);
    }
    for (int i = 0; i < n_meta; i++)
        meta[i] = (mt_st_meta){mt_st_metadata_key(st, i), mt_st_metadata_value(st, i)};
    char path[64];
    fuzz_scratch_path(path, sizeof path, "mtlab-fuzz-", ".safetensors");
    if (mt_st_write(path, w, n, meta, n_meta) == 0) {
        mt_safetensors *again = mt_st_open(path);
        if (!again) fprintf(stderr, "re-read failed: %s\n", mt_last_error());
        CHECK(again);
        CHECK(mt_st_count(again) == n && mt_st_metadata_count(again) == n_meta);
        for (int i = 0; i < n; i++) {
            const mt_st_tensor *a = mt_st_tensor_at(st, i), *b = mt_st_tensor_at(again, i);
            CHECK(strcmp(a->name, b->name) == 0 && a->dtype == b->dtype && a->ndim == b->ndim);
            CHECK(memcmp(a->shape, b->shape, sizeof a->shape) == 0 && a->nbytes == b->nbytes);
            CHECK(a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0);
            CHECK(b->offset % mt_dtype_size(b->dtype) == 0);
        }
        for (int i = 0; i < n_meta; i++)
            CHECK(strcmp(mt_st_metadata_value(again, i), mt_st_metadata_value(st, i)) == 0);
        mt_st_close(again);
        unlink(path);
    } else {
        /* the reader accepted these names and shapes, so the writer has no reason to refuse */
        fprintf(stderr, "write failed: %s\n", mt_last_error());
        CHECK(0);
    }
    free(w);
    free(meta);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_clear_error();
    mt_safetensors *st = mt_st_open_buffer(data, size, NAME);
    if (!st) {
        const char *msg = mt_last_error();
        CHECK(strncmp(msg, NAME, strlen(NAME)) == 0);
        CHECK(strchr(msg, '\n') == NULL);
        return 0;
    }
    for (int i = 0; i < mt_st_count(st); i++) {
        const mt_st_tensor *t = mt_st_tensor_at(st, i);
        if (i > 0) CHECK(strcmp(mt_st_tensor_at(st, i - 1)->name, t->name) < 0);
        check_tensor(st, t, data, size);
    }
    for (int i = 0; i < mt_st_metadata_count(st); i++)
        CHECK(mt_st_metadata_get(st, mt_st_metadata_key(st, i)) == mt_st_metadata_value(st, i));
    check_rewrite(st);
    mt_st_close(st);
    return 0;
}
