/* safetensors reader and writer, and the fp16/bf16 conversions they use.
 * Fixtures: tests/fixtures/bundle/ (make_fixtures.py writes them with numpy, torch and the
 * safetensors library). Malformed files are built here, one problem each. */
#include "test_util.h"

#include "math/half.h"
#include "mtlab/error.h"
#include "mtlab/safetensors.h"

#include <dirent.h>
#include <ftw.h>
#include <unistd.h>

#define FIXTURES "tests/fixtures/bundle/"

static char tmp_dir[64];

static int make_tmp_dir(void **state)
{
    (void)state;
    return test_make_tmpdir(tmp_dir, sizeof tmp_dir, "st");
}

static int remove_tmp_dir(void **state)
{
    (void)state;
    return test_remove_tree(tmp_dir);
}

static const char *tmp_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmp_dir, name);
    return buf;
}

static unsigned char *read_bytes(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(*len + 1);
    assert_int_equal(fread(data, 1, *len, f), *len);
    fclose(f);
    return data;
}

static void assert_error_contains(const char *needle)
{
    const char *msg = mt_last_error();
    if (!strstr(msg, needle)) fail_msg("error \"%s\" does not contain \"%s\"", msg, needle);
}

/* Number of entries in tmp_dir (temporary files left behind show up here). */
static int tmp_dir_entries(void)
{
    DIR *d = opendir(tmp_dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* ---------------------------------------------------------------- fp16 / bf16 conversions */

static void test_half_every_pattern_round_trips(void **state)
{
    (void)state;
    for (uint32_t h = 0; h <= 0xFFFF; h++) {
        if (mt_f32_to_f16(mt_f16_to_f32((uint16_t)h)) != h)
            fail_msg("fp16 0x%04x does not round-trip", h);
        if (mt_f32_to_bf16(mt_bf16_to_f32((uint16_t)h)) != h)
            fail_msg("bf16 0x%04x does not round-trip", h);
    }
}

static void test_half_special_values(void **state)
{
    (void)state;
    static const struct {
        uint32_t f32;
        uint16_t f16, bf16;
    } cases[] = {
        {0x00000000, 0x0000, 0x0000}, /* +0 */
        {0x80000000, 0x8000, 0x8000}, /* -0 */
        {0x7F800000, 0x7C00, 0x7F80}, /* inf */
        {0xFF800000, 0xFC00, 0xFF80}, /* -inf */
        {0x3F801000, 0x3C00, 0x3F80}, /* 1 + 2^-11: fp16 tie, stays even */
        {0x3F803000, 0x3C02, 0x3F80}, /* 1 + 3*2^-11: fp16 tie, rounds up to even */
        {0x3F808000, 0x3C04, 0x3F80}, /* 1 + 2^-8: bf16 tie, stays even */
        {0x3F818000, 0x3C0C, 0x3F82}, /* 1 + 3*2^-8: bf16 tie, rounds up to even */
        {0x477FE000, 0x7BFF, 0x4780}, /* 65504, the largest fp16 */
        {0x477FEFFF, 0x7BFF, 0x4780}, /* just below 65520: rounds down */
        {0x477FF000, 0x7C00, 0x4780}, /* 65520: tie between 65504 and 65536 -> inf */
        {0x33000000, 0x0000, 0x3300}, /* 2^-25: tie between 0 and 2^-24 -> 0 */
        {0x33000001, 0x0001, 0x3300}, /* just above 2^-25 -> smallest subnormal */
        {0x33C00000, 0x0002, 0x33C0}, /* 1.5 * 2^-24: tie -> 2 * 2^-24 */
        {0x34200000, 0x0002, 0x3420}, /* 2.5 * 2^-24: tie -> 2 * 2^-24 */
        {0x387FF000, 0x0400, 0x3880}, /* just below 2^-14, rounds up into the normals */
        {0x00000001, 0x0000, 0x0000}, /* fp32 subnormal */
        {0x7F7FFFFF, 0x7C00, 0x7F80}, /* fp32 max: bf16 rounds to inf */
        {0x7FC00000, 0x7E00, 0x7FC0}, /* quiet NaN */
        {0x7F800001, 0x7E00, 0x7FC0}, /* NaN whose payload would vanish: quiet NaN */
        {0xFFA00000, 0xFD00, 0xFFA0}, /* negative signalling NaN keeps sign and payload */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float f = mt_f32_from_bits(cases[i].f32);
        if (mt_f32_to_f16(f) != cases[i].f16)
            fail_msg("fp32 0x%08x -> fp16 0x%04x, expected 0x%04x", cases[i].f32, mt_f32_to_f16(f),
                     cases[i].f16);
        if (mt_f32_to_bf16(f) != cases[i].bf16)
            fail_msg("fp32 0x%08x -> bf16 0x%04x, expected 0x%04x", cases[i].f32, mt_f32_to_bf16(f),
                     cases[i].bf16);
    }
    assert_int_equal(mt_f32_bits(mt_f16_to_f32(0x0001)), 0x33800000); /* 2^-24 */
    assert_int_equal(mt_f32_bits(mt_f16_to_f32(0x83FF)), 0xB87FC000); /* -1023 * 2^-24 */
    assert_int_equal(mt_f32_bits(mt_f16_to_f32(0x7C01)), 0x7F802000); /* NaN payload kept */
    assert_int_equal(mt_f32_bits(mt_bf16_to_f32(0xFFC1)), 0xFFC10000);
}

static uint16_t u16_at(const mt_st_tensor *t, size_t i)
{
    uint16_t v;
    memcpy(&v, (const unsigned char *)t->data + 2 * i, 2);
    return v;
}

static uint32_t u32_at(const mt_st_tensor *t, size_t i)
{
    uint32_t v;
    memcpy(&v, (const unsigned char *)t->data + 4 * i, 4);
    return v;
}

/* numpy (fp16) and torch (bf16) rounded the same inputs; every bit must agree. */
static void test_half_matches_numpy_and_torch(void **state)
{
    (void)state;
    mt_safetensors *st = mt_st_open(FIXTURES "conversions.safetensors");
    assert_non_null(st);
    const mt_st_tensor *x = mt_st_find(st, "x"), *f16 = mt_st_find(st, "x_f16"),
                       *wide = mt_st_find(st, "x_f16_f32"), *bf16 = mt_st_find(st, "x_bf16");
    assert_non_null(x);
    assert_non_null(f16);
    assert_non_null(wide);
    assert_non_null(bf16);
    assert_true(x->numel > 8000);
    assert_int_equal(f16->dtype, MT_DT_F16);
    assert_int_equal(bf16->dtype, MT_DT_BF16);
    for (size_t i = 0; i < x->numel; i++) {
        float v = mt_f32_from_bits(u32_at(x, i));
        if (mt_f32_to_f16(v) != u16_at(f16, i))
            fail_msg("x[%zu] = %a: fp16 0x%04x, numpy 0x%04x", i, (double)v, mt_f32_to_f16(v),
                     u16_at(f16, i));
        if (mt_f32_bits(mt_f16_to_f32(u16_at(f16, i))) != u32_at(wide, i))
            fail_msg("fp16 0x%04x widens to 0x%08x, numpy 0x%08x", u16_at(f16, i),
                     mt_f32_bits(mt_f16_to_f32(u16_at(f16, i))), u32_at(wide, i));
        if (mt_f32_to_bf16(v) != u16_at(bf16, i))
            fail_msg("x[%zu] = %a: bf16 0x%04x, torch 0x%04x", i, (double)v, mt_f32_to_bf16(v),
                     u16_at(bf16, i));
    }
    mt_st_close(st);
}

/* ---------------------------------------------------------------- reading the library's files */

static void test_reads_file_written_by_safetensors_library(void **state)
{
    (void)state;
    mt_safetensors *st = mt_st_open(FIXTURES "hf_written.safetensors");
    if (!st) fail_msg("%s", mt_last_error());
    assert_int_equal(mt_st_count(st), 9);
    assert_string_equal(mt_st_tensor_at(st, 0)->name, "bf.weight"); /* name order */
    assert_string_equal(mt_st_tensor_at(st, 8)->name, "scalar");
    assert_int_equal(mt_st_metadata_count(st), 2);
    assert_string_equal(mt_st_metadata_get(st, "format"), "pt");
    assert_string_equal(mt_st_metadata_get(st, "source"), "make_fixtures.py");
    assert_null(mt_st_metadata_get(st, "absent"));

    float embed[12];
    assert_int_equal(mt_st_read_f32(st, "embed.weight", 2, (const int64_t[]){3, 4}, embed), 0);
    for (int i = 0; i < 12; i++) assert_true(embed[i] == (float)i / 8 - 0.75f);

    float half[5];
    assert_int_equal(mt_st_read_f32(st, "half.odd", 1, (const int64_t[]){5}, half), 0);
    const float half_want[5] = {1.0f, -2.5f, 65504.0f, 0x1p-14f, 0x1p-24f};
    for (int i = 0; i < 5; i++) assert_true(half[i] == half_want[i]);

    float bf[4];
    assert_int_equal(mt_st_read_f32(st, "bf.weight", 2, (const int64_t[]){2, 2}, bf), 0);
    assert_true(bf[0] == 1.0f && bf[1] == -0.5f && bf[2] == 3.140625f);
    assert_true(fabsf(bf[3] - 1e30f) < 1e30f / 128);

    int32_t ids32[6];
    assert_int_equal(mt_st_read_raw(st, "ids32", MT_DT_I32, 2, (const int64_t[]){2, 3}, ids32), 0);
    assert_int_equal(ids32[2], -2);
    assert_int_equal(ids32[3], 2147483647);
    assert_int_equal(ids32[4], INT32_MIN);
    int64_t ids64[2];
    assert_int_equal(mt_st_read_raw(st, "ids64", MT_DT_I64, 1, (const int64_t[]){2}, ids64), 0);
    assert_true(ids64[0] == -1 && ids64[1] == (int64_t)1 << 40);
    uint8_t bytes[3], mask[4];
    assert_int_equal(mt_st_read_raw(st, "bytes", MT_DT_U8, 1, (const int64_t[]){3}, bytes), 0);
    assert_int_equal(bytes[2], 255);
    assert_int_equal(mt_st_read_raw(st, "mask", MT_DT_BOOL, 1, (const int64_t[]){4}, mask), 0);
    assert_true(mask[0] == 1 && mask[1] == 0 && mask[3] == 1);

    float scalar;
    assert_int_equal(mt_st_read_f32(st, "scalar", 0, NULL, &scalar), 0);
    assert_true(scalar == 2.5f);
    const mt_st_tensor *empty = mt_st_find(st, "empty");
    assert_non_null(empty);
    assert_int_equal(empty->numel, 0);
    assert_int_equal(empty->ndim, 2);
    assert_int_equal(mt_st_read_f32(st, "empty", 2, (const int64_t[]){0, 4}, NULL), 0);
    mt_st_close(st);
}

/* Reading the library's file, writing every tensor back raw and reading again changes nothing. */
static void test_rewrite_of_library_file_is_identical(void **state)
{
    (void)state;
    char path[128];
    mt_safetensors *in = mt_st_open(FIXTURES "hf_written.safetensors");
    assert_non_null(in);
    int n = mt_st_count(in);
    mt_st_write_tensor out[16];
    for (int i = 0; i < n; i++) {
        const mt_st_tensor *t = mt_st_tensor_at(in, i);
        out[i] = (mt_st_write_tensor){
            .name = t->name, .dtype = t->dtype, .ndim = t->ndim, .raw = t->data};
        memcpy(out[i].shape, t->shape, sizeof t->shape);
    }
    const mt_st_meta meta[] = {{"format", "pt"}, {"source", "make_fixtures.py"}};
    assert_int_equal(
        mt_st_write(tmp_path(path, sizeof path, "rewrite.safetensors"), out, n, meta, 2), 0);
    mt_safetensors *again = mt_st_open(path);
    if (!again) fail_msg("%s", mt_last_error());
    assert_int_equal(mt_st_count(again), n);
    for (int i = 0; i < n; i++) {
        const mt_st_tensor *a = mt_st_tensor_at(in, i), *b = mt_st_tensor_at(again, i);
        assert_string_equal(a->name, b->name);
        assert_int_equal(a->dtype, b->dtype);
        assert_int_equal(a->ndim, b->ndim);
        assert_memory_equal(a->shape, b->shape, sizeof a->shape);
        assert_int_equal(a->nbytes, b->nbytes);
        if (a->nbytes) assert_memory_equal(a->data, b->data, a->nbytes);
        /* larger elements first, so every tensor is aligned to its element size */
        assert_int_equal(b->offset % mt_dtype_size(b->dtype), 0);
    }
    assert_string_equal(mt_st_metadata_get(again, "source"), "make_fixtures.py");
    mt_st_close(again);
    mt_st_close(in);
    unlink(path);
}

/* ---------------------------------------------------------------- writing */

/* The same tensors as LAYOUT_TENSORS in make_fixtures.py. */
static void test_writer_output_matches_reference_bytes(void **state)
{
    (void)state;
    char path[128];
    const float a[4] = {0.5f, -1.5f, 3.0f, 1e-3f}, b[3] = {1.0f, -2.0f, 0.333251953125f},
                c[3] = {1.0f, -0.5f, 2.0f}, f = 7.25f;
    const int64_t d[2] = {-1, (int64_t)1 << 40};
    const mt_st_write_tensor tensors[] = {
        {.name = "f.scalar", .dtype = MT_DT_F32, .ndim = 0, .f32 = &f},
        {.name = "a.weight", .dtype = MT_DT_F32, .ndim = 2, .shape = {2, 2}, .f32 = a},
        {.name = "e.empty", .dtype = MT_DT_F32, .ndim = 2, .shape = {0, 3}},
        {.name = "b.half", .dtype = MT_DT_F16, .ndim = 1, .shape = {3}, .f32 = b},
        {.name = "d.ids", .dtype = MT_DT_I64, .ndim = 1, .shape = {2}, .raw = d},
        {.name = "c.bf", .dtype = MT_DT_BF16, .ndim = 2, .shape = {1, 3}, .f32 = c},
    };
    const mt_st_meta meta[] = {{"producer", "mtlab"}, {"format", "pt"}};
    tmp_path(path, sizeof path, "layout.safetensors");
    if (mt_st_write(path, tensors, 6, meta, 2)) fail_msg("%s", mt_last_error());
    size_t got_len, want_len;
    unsigned char *got = read_bytes(path, &got_len),
                  *want = read_bytes(FIXTURES "mtlab_layout.safetensors", &want_len);
    assert_int_equal(got_len, want_len);
    assert_memory_equal(got, want, want_len);
    free(got);
    free(want);
    unlink(path);
}

/* Every fp32 pattern class (NaN payloads, subnormals, -0) survives F32; every fp16 and bf16
 * pattern survives raw F16/BF16; fp32 sources are rounded exactly as mt_f32_to_f16/bf16. */
static void test_round_trip_is_bit_exact(void **state)
{
    (void)state;
    enum { N16 = 65536, N32 = 4096 };
    uint16_t *all16 = malloc(N16 * sizeof *all16);
    for (uint32_t i = 0; i < N16; i++) all16[i] = (uint16_t)i;
    uint32_t f32_bits[N32];
    const uint32_t specials[] = {0x7FA00001, 0xFFFFFFFF, 0x7FC00000, 0x00000001, 0x80000000,
                                 0x7F800000, 0xFF800000, 0x007FFFFF, 0x7F7FFFFF, 0x3F801000};
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < N32; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        f32_bits[i] = i < 10 ? specials[i] : (uint32_t)(s >> 32);
    }
    float f32[N32];
    memcpy(f32, f32_bits, sizeof f32);
    const mt_st_write_tensor tensors[] = {
        {.name = "f32", .dtype = MT_DT_F32, .ndim = 2, .shape = {64, 64}, .f32 = f32},
        {.name = "f16_raw", .dtype = MT_DT_F16, .ndim = 1, .shape = {N16}, .raw = all16},
        {.name = "bf16_raw", .dtype = MT_DT_BF16, .ndim = 1, .shape = {N16}, .raw = all16},
        {.name = "f16_from_f32", .dtype = MT_DT_F16, .ndim = 1, .shape = {N32}, .f32 = f32},
        {.name = "bf16_from_f32", .dtype = MT_DT_BF16, .ndim = 1, .shape = {N32}, .f32 = f32},
    };
    char path[128];
    tmp_path(path, sizeof path, "roundtrip.safetensors");
    if (mt_st_write(path, tensors, 5, NULL, 0)) fail_msg("%s", mt_last_error());
    mt_safetensors *st = mt_st_open(path);
    if (!st) fail_msg("%s", mt_last_error());

    float back[N32];
    assert_int_equal(mt_st_read_f32(st, "f32", 2, (const int64_t[]){64, 64}, back), 0);
    assert_memory_equal(back, f32_bits, sizeof back);
    uint16_t *raw = malloc(N16 * sizeof *raw);
    assert_int_equal(mt_st_read_raw(st, "f16_raw", MT_DT_F16, 1, (const int64_t[]){N16}, raw), 0);
    assert_memory_equal(raw, all16, N16 * sizeof *raw);
    assert_int_equal(mt_st_read_raw(st, "bf16_raw", MT_DT_BF16, 1, (const int64_t[]){N16}, raw), 0);
    assert_memory_equal(raw, all16, N16 * sizeof *raw);

    const mt_st_tensor *h = mt_st_find(st, "f16_from_f32"), *b = mt_st_find(st, "bf16_from_f32");
    for (int i = 0; i < N32; i++) {
        assert_int_equal(u16_at(h, (size_t)i), mt_f32_to_f16(f32[i]));
        assert_int_equal(u16_at(b, (size_t)i), mt_f32_to_bf16(f32[i]));
    }
    /* reading F16 as fp32 widens exactly */
    assert_int_equal(mt_st_read_f32(st, "f16_from_f32", 1, (const int64_t[]){N32}, back), 0);
    for (int i = 0; i < N32; i++)
        assert_int_equal(mt_f32_bits(back[i]), mt_f32_bits(mt_f16_to_f32(u16_at(h, (size_t)i))));
    mt_st_close(st);
    free(raw);
    free(all16);
    unlink(path);
}

static void test_failed_write_keeps_old_file(void **state)
{
    (void)state;
    char path[128];
    tmp_path(path, sizeof path, "keep.safetensors");
    const float one = 1.0f;
    const mt_st_write_tensor good = {
        .name = "w", .dtype = MT_DT_F32, .ndim = 1, .shape = {1}, .f32 = &one};
    assert_int_equal(mt_st_write(path, &good, 1, NULL, 0), 0);
    size_t len;
    unsigned char *before = read_bytes(path, &len);
    const int entries = tmp_dir_entries();

    const mt_st_write_tensor dup[] = {good, good};
    assert_int_equal(mt_st_write(path, dup, 2, NULL, 0), -1);
    assert_error_contains("tensor 'w' is given twice");
    const mt_st_write_tensor as_int = {
        .name = "w", .dtype = MT_DT_I32, .ndim = 1, .shape = {1}, .f32 = &one};
    assert_int_equal(mt_st_write(path, &as_int, 1, NULL, 0), -1);
    assert_error_contains("float32 values cannot be stored as I32");
    const mt_st_write_tensor negative = {
        .name = "w", .dtype = MT_DT_F32, .ndim = 1, .shape = {-2}, .f32 = &one};
    assert_int_equal(mt_st_write(path, &negative, 1, NULL, 0), -1);
    assert_error_contains("shape dimension 0 is negative (-2)");
    const mt_st_write_tensor reserved = {
        .name = "__metadata__", .dtype = MT_DT_F32, .ndim = 0, .f32 = &one};
    assert_int_equal(mt_st_write(path, &reserved, 1, NULL, 0), -1);
    assert_error_contains("'__metadata__' is reserved");
    const mt_st_write_tensor no_data = {.name = "w", .dtype = MT_DT_F32, .ndim = 1, .shape = {1}};
    assert_int_equal(mt_st_write(path, &no_data, 1, NULL, 0), -1);
    assert_error_contains("tensor 'w': no data");
    const mt_st_write_tensor bad_utf8 = {
        .name = "w\xC3", .dtype = MT_DT_F32, .ndim = 0, .f32 = &one};
    assert_int_equal(mt_st_write(path, &bad_utf8, 1, NULL, 0), -1);
    assert_error_contains("not valid UTF-8");
    assert_error_contains(path);

    size_t after_len;
    unsigned char *after = read_bytes(path, &after_len);
    assert_int_equal(after_len, len);
    assert_memory_equal(after, before, len);
    assert_int_equal(tmp_dir_entries(), entries); /* no temporary files left behind */
    free(before);
    free(after);

    assert_int_equal(mt_st_write("/nonexistent-dir/x.safetensors", &good, 1, NULL, 0), -1);
    assert_error_contains("/nonexistent-dir/x.safetensors: cannot create a temporary file");
    unlink(path);
}

/* ---------------------------------------------------------------- malformed files */

/* u64 header length | header | data_len bytes of data */
static unsigned char *build_file(const char *header, size_t data_len, size_t *len)
{
    size_t hlen = strlen(header);
    *len = 8 + hlen + data_len;
    unsigned char *file = calloc(1, *len);
    for (int i = 0; i < 8; i++) file[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    memcpy(file + 8, header, hlen);
    return file;
}

/* Both the mapped-file path and the buffer path refuse the bytes with the same message, which
 * names the file and contains every needle. */
static void expect_refused(const unsigned char *bytes, size_t len, const char *needle,
                           const char *needle2)
{
    char path[128];
    tmp_path(path, sizeof path, "bad.safetensors");
    test_write_file(path, bytes, len);
    mt_clear_error();
    mt_safetensors *st = mt_st_open(path);
    if (st) fail_msg("%s was accepted", path);
    assert_error_contains(path);
    assert_error_contains(needle);
    if (needle2) assert_error_contains(needle2);
    char from_file[1024];
    snprintf(from_file, sizeof from_file, "%s", mt_last_error() + strlen(path));
    assert_null(mt_st_open_buffer(bytes, len, "mem.safetensors"));
    assert_error_contains("mem.safetensors");
    assert_string_equal(mt_last_error() + strlen("mem.safetensors"), from_file);
    unlink(path);
}

static void expect_header_refused(const char *header, size_t data_len, const char *needle,
                                  const char *needle2)
{
    size_t len;
    unsigned char *file = build_file(header, data_len, &len);
    expect_refused(file, len, needle, needle2);
    free(file);
}

static void test_truncated_file(void **state)
{
    (void)state;
    size_t len;
    unsigned char *whole = read_bytes(FIXTURES "hf_written.safetensors", &len);
    mt_safetensors *st = mt_st_open_buffer(whole, len, "whole");
    assert_non_null(st);
    mt_st_close(st);
    expect_refused(whole, len - 3, "run past the end of the data section", "tensor '");
    expect_refused(whole, 100, "header length", "runs past the end of the file (100 bytes)");
    expect_refused(whole, 5, "file is 5 bytes, too short", NULL);
    expect_refused(whole, 0, "file is 0 bytes, too short", NULL);
    free(whole);
}

static void test_header_length_past_end_of_file(void **state)
{
    (void)state;
    unsigned char file[8 + 10] = {200, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    expect_refused(file, sizeof file, "header length 200 runs past the end of the file (18 bytes)",
                   NULL);
}

static void test_header_length_absurdly_large(void **state)
{
    (void)state;
    unsigned char file[16] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, '{', '}'};
    expect_refused(file, sizeof file, "header length 18446744073709551615 is absurdly large", NULL);
    unsigned char just_over[16] = {0x01, 0xE1, 0xF5, 0x05, 0, 0, 0, 0}; /* 100000001 */
    expect_refused(just_over, sizeof just_over, "header length 100000001 is absurdly large", NULL);
}

static void test_bad_json(void **state)
{
    (void)state;
    expect_header_refused("{\"w\": {\"dtype\": \"F32\", ", 0, "header is not valid JSON", NULL);
    expect_header_refused("{\"w\": 1} trailing", 0, "header is not valid JSON", NULL);
    expect_header_refused("", 0, "header is not valid JSON", NULL);
    expect_header_refused("{\"w\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
                          "\"w\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[4,8]}}",
                          8, "header is not valid JSON", "duplicate");
}

/* Regression (fuzz_safetensors): jansson quotes the bad input in its message, and a raw newline
 * there split the one-line error in two. */
static void test_json_error_stays_on_one_line(void **state)
{
    (void)state;
    size_t len;
    unsigned char *file = build_file("{\"c.b\\\n\":{}}", 0, &len);
    assert_null(mt_st_open_buffer(file, len, "mem.safetensors"));
    assert_error_contains(
        "mem.safetensors: header is not valid JSON: invalid escape near '\"c.b\\?'");
    assert_null(strchr(mt_last_error(), '\n'));
    free(file);
    unsigned char *crash = read_bytes(FIXTURES "regress_newline_in_json_error.safetensors", &len);
    assert_null(mt_st_open_buffer(crash, len, "crash.safetensors"));
    assert_error_contains("crash.safetensors: header is not valid JSON");
    assert_null(strchr(mt_last_error(), '\n'));
    free(crash);
}

static void test_json_not_an_object(void **state)
{
    (void)state;
    expect_header_refused("[1, 2]", 0, "header is a list, expected a JSON object", NULL);
    expect_header_refused("42", 0, "header is an integer, expected a JSON object", NULL);
    expect_header_refused("{\"w\": [1]}", 0, "tensor 'w': entry is a list, expected an object",
                          NULL);
}

static void test_unknown_dtype(void **state)
{
    (void)state;
    expect_header_refused("{\"w\":{\"dtype\":\"F128\",\"shape\":[1],\"data_offsets\":[0,16]}}", 16,
                          "tensor 'w': unknown dtype 'F128'", NULL);
    expect_header_refused("{\"w\":{\"dtype\":3,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                          "tensor 'w': dtype is an integer, expected a string", NULL);
    expect_header_refused("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                          "tensor 'w': missing 'dtype'", NULL);
}

static void test_bad_shape(void **state)
{
    (void)state;
    expect_header_refused("{\"w\":{\"dtype\":\"F32\",\"shape\":\"3x4\",\"data_offsets\":[0,48]}}",
                          48, "tensor 'w': shape is a string, expected a list of dimensions", NULL);
    expect_header_refused("{\"w\":{\"dtype\":\"F32\",\"shape\":[4,-3],\"data_offsets\":[0,48]}}",
                          48, "tensor 'w': shape dimension 1 is negative (-3)", NULL);
    expect_header_refused("{\"w\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8,
                          "tensor 'w': shape dimension 0 is a number (2.5), expected an integer",
                          NULL);
    expect_header_refused(
        "{\"w\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1,
        "tensor 'w': shape has 9 dimensions, at most 8 are supported", NULL);
    expect_header_refused(
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],"
        "\"data_offsets\":[0,4]}}",
        4, "tensor 'w': shape (4294967296, 4294967296, 4294967296) has too many elements", NULL);
}

static void test_offsets_out_of_range(void **state)
{
    (void)state;
    expect_header_refused(
        "{\"lm_head.weight\":{\"dtype\":\"F32\",\"shape\":[2247],\"data_offsets\":[10,9000]}}", 812,
        "tensor 'lm_head.weight': data_offsets [10, 9000] run past the end of the data section "
        "(812 bytes)",
        NULL);
    expect_header_refused(
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4,
        "tensor 'w': data_offsets must be two non-negative integers [begin, end], got [0]", NULL);
    expect_header_refused("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4,
                          "data_offsets must be two non-negative integers", NULL);
    expect_header_refused("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4,
                          "tensor 'w': missing 'data_offsets'", NULL);
}

static void test_offsets_reversed(void **state)
{
    (void)state;
    expect_header_refused("{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}", 8,
                          "tensor 'w': data_offsets [8, 4] are reversed (begin after end)", NULL);
}

static void test_overlapping_tensors(void **state)
{
    (void)state;
    expect_header_refused(
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[12],\"data_offsets\":[0,48]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[12],\"data_offsets\":[40,88]}}",
        88, "tensors 'a' (data_offsets [0, 48]) and 'b' (data_offsets [40, 88]) overlap", NULL);
    /* a long tensor overlapping one two places later in offset order */
    expect_header_refused(
        "{\"long\":{\"dtype\":\"U8\",\"shape\":[100],\"data_offsets\":[0,100]},"
        "\"x\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[10,10]},"
        "\"y\":{\"dtype\":\"U8\",\"shape\":[10],\"data_offsets\":[50,60]}}",
        100, "tensors 'long' (data_offsets [0, 100]) and 'y' (data_offsets [50, 60]) overlap",
        NULL);
    /* the same range twice */
    expect_header_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                          "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
                          4, "overlap", NULL);
}

static void test_shape_size_mismatch(void **state)
{
    (void)state;
    expect_header_refused(
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[0,40]}}", 48,
        "tensor 'w': shape (3, 4) of F32 is 48 bytes but data_offsets [0, 40] hold 40", NULL);
    expect_header_refused("{\"w\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[0,4]}}", 4,
                          "tensor 'w': shape () of BF16 is 2 bytes but data_offsets [0, 4] hold 4",
                          NULL);
}

static void test_bad_metadata(void **state)
{
    (void)state;
    expect_header_refused("{\"__metadata__\":{\"format\":1}}", 0,
                          "__metadata__ entry 'format' is an integer, expected a string", NULL);
    expect_header_refused("{\"__metadata__\":[\"pt\"]}", 0,
                          "__metadata__ is a list, expected an object of strings", NULL);
}

static void test_empty_header_and_gaps_are_fine(void **state)
{
    (void)state;
    size_t len;
    unsigned char *file = build_file("{}", 0, &len);
    mt_safetensors *st = mt_st_open_buffer(file, len, "empty");
    assert_non_null(st);
    assert_int_equal(mt_st_count(st), 0);
    assert_null(mt_st_find(st, "x"));
    mt_st_close(st);
    free(file);
    /* unused bytes between tensors are not an error (nothing reads them) */
    file = build_file("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[6,8]},"
                      "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
                      8, &len);
    st = mt_st_open_buffer(file, len, "gaps");
    if (!st) fail_msg("%s", mt_last_error());
    assert_int_equal(mt_st_find(st, "a")->offset, 6);
    mt_st_close(st);
    free(file);
}

static void test_missing_tensor_and_wrong_shape(void **state)
{
    (void)state;
    mt_safetensors *st = mt_st_open(FIXTURES "hf_written.safetensors");
    assert_non_null(st);
    float out[16];
    assert_int_equal(mt_st_read_f32(st, "lm_head.weight", 2, (const int64_t[]){4, 4}, out), -1);
    assert_error_contains(FIXTURES "hf_written.safetensors: missing tensor 'lm_head.weight'");
    assert_int_equal(mt_st_read_f32(st, "embed.weight", 2, (const int64_t[]){4, 4}, out), -1);
    assert_error_contains(
        FIXTURES "hf_written.safetensors: tensor 'embed.weight' has shape (3, 4), expected (4, 4)");
    assert_int_equal(mt_st_read_f32(st, "embed.weight", 1, (const int64_t[]){12}, out), -1);
    assert_error_contains("has shape (3, 4), expected (12)");
    assert_int_equal(mt_st_read_f32(st, "ids32", 2, (const int64_t[]){2, 3}, out), -1);
    assert_error_contains("tensor 'ids32' is I32, not a floating-point tensor");
    assert_int_equal(mt_st_read_raw(st, "ids32", MT_DT_I64, 2, (const int64_t[]){2, 3}, out), -1);
    assert_error_contains("tensor 'ids32' is I32, expected I64");
    mt_st_close(st);
}

static void test_open_errors(void **state)
{
    (void)state;
    assert_null(mt_st_open("tests/fixtures/bundle/no-such.safetensors"));
    assert_error_contains("tests/fixtures/bundle/no-such.safetensors: No such file or directory");
    assert_null(mt_st_open("tests/fixtures/bundle"));
    assert_error_contains("tests/fixtures/bundle: is a directory");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_every_pattern_round_trips),
        cmocka_unit_test(test_half_special_values),
        cmocka_unit_test(test_half_matches_numpy_and_torch),
        cmocka_unit_test(test_reads_file_written_by_safetensors_library),
        cmocka_unit_test(test_rewrite_of_library_file_is_identical),
        cmocka_unit_test(test_writer_output_matches_reference_bytes),
        cmocka_unit_test(test_round_trip_is_bit_exact),
        cmocka_unit_test(test_failed_write_keeps_old_file),
        cmocka_unit_test(test_truncated_file),
        cmocka_unit_test(test_header_length_past_end_of_file),
        cmocka_unit_test(test_header_length_absurdly_large),
        cmocka_unit_test(test_bad_json),
        cmocka_unit_test(test_json_error_stays_on_one_line),
        cmocka_unit_test(test_json_not_an_object),
        cmocka_unit_test(test_unknown_dtype),
        cmocka_unit_test(test_bad_shape),
        cmocka_unit_test(test_offsets_out_of_range),
        cmocka_unit_test(test_offsets_reversed),
        cmocka_unit_test(test_overlapping_tensors),
        cmocka_unit_test(test_shape_size_mismatch),
        cmocka_unit_test(test_bad_metadata),
        cmocka_unit_test(test_empty_header_and_gaps_are_fine),
        cmocka_unit_test(test_missing_tensor_and_wrong_shape),
        cmocka_unit_test(test_open_errors),
    };
    return cmocka_run_group_tests_name("safetensors", tests, make_tmp_dir, remove_tmp_dir);
}
