/* PyTorch checkpoints (pytorch_model.bin) through the restricted unpickler.
 * Fixtures: tests/fixtures/torch_pickle/ (make_fixtures.py writes them with torch, transformers
 * and safetensors): tensors of every kind against a safetensors copy, and tiny Marian and Mamba
 * models saved both ways, compared bit for bit. Malformed pickles and archives are built here,
 * one problem each: pickles byte by byte, archives with libzip. */
#include "test_util.h"

#include "io/torch_pickle.h"
#include "mtlab/error.h"
#include "mtlab/safetensors.h"
#include "mtlab/torch_checkpoint.h"

#include <zip.h>

#define FIXTURES "tests/fixtures/torch_pickle/"

static void assert_error_contains(const char *needle)
{
    const char *msg = mt_last_error();
    if (!strstr(msg, needle)) fail_msg("error \"%s\" does not contain \"%s\"", msg, needle);
    if (strchr(msg, '\n')) fail_msg("error \"%s\" is more than one line", msg);
}

/* Same names, dtypes, shapes and bytes. */
static void assert_same_tensor(const mt_st_tensor *a, const mt_st_tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->nbytes != b->nbytes)
        fail_msg("tensor '%s': %s %d-d %zu bytes vs %s %d-d %zu bytes", a->name,
                 mt_dtype_name(a->dtype), a->ndim, a->nbytes, mt_dtype_name(b->dtype), b->ndim,
                 b->nbytes);
    for (int d = 0; d < a->ndim; d++) assert_int_equal(a->shape[d], b->shape[d]);
    if (a->nbytes && memcmp(a->data, b->data, a->nbytes) != 0)
        fail_msg("tensor '%s': different bytes", a->name);
}

/* ---------------------------------------------------------------- files torch wrote */

static void check_tensors(const char *path)
{
    mt_safetensors *bin = mt_torch_open(path);
    if (!bin) fail_msg("%s", mt_last_error());
    mt_safetensors *ref = mt_st_open(FIXTURES "tensors.safetensors");
    assert_non_null(ref);
    assert_string_equal(mt_st_name(bin), path);
    assert_int_equal(mt_st_count(bin), mt_st_count(ref));
    assert_int_equal(mt_st_count(bin), 14);
    for (int i = 0; i < mt_st_count(ref); i++) {
        const mt_st_tensor *want = mt_st_tensor_at(ref, i);
        const mt_st_tensor *got = mt_st_find(bin, want->name);
        if (!got) fail_msg("tensor '%s' missing from %s", want->name, path);
        assert_same_tensor(got, want);
    }
    /* the views by hand: wide is (4, 6); transposed = wide.t(), sliced = wide[1:3, 2:5] */
    const mt_st_tensor *t = mt_st_find(bin, "transposed"), *s = mt_st_find(bin, "sliced");
    assert_int_equal(t->shape[0], 6);
    assert_int_equal(t->shape[1], 4);
    float tv[24], sv[6];
    assert_int_equal(mt_st_read_f32(bin, "transposed", 2, (int64_t[]){6, 4}, tv), 0);
    assert_int_equal(mt_st_read_f32(bin, "sliced", 2, (int64_t[]){2, 3}, sv), 0);
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++)
            assert_memory_equal(&sv[r * 3 + c], &tv[(c + 2) * 4 + (r + 1)], sizeof(float));
    assert_int_equal(s->dtype, MT_DT_F32);
    assert_int_equal(mt_st_find(bin, "bf16")->dtype, MT_DT_BF16);
    assert_int_equal(mt_st_find(bin, "f16")->dtype, MT_DT_F16);
    assert_int_equal(mt_st_find(bin, "i64")->dtype, MT_DT_I64);
    assert_int_equal(mt_st_find(bin, "mask")->dtype, MT_DT_BOOL);
    assert_int_equal(mt_st_find(bin, "scalar")->ndim, 0);
    assert_int_equal(mt_st_find(bin, "empty")->numel, 0);
    /* tied: two keys, one tensor; each key gets its own copy */
    const mt_st_tensor *e = mt_st_find(bin, "embed.weight"), *l = mt_st_find(bin, "lm_head.weight");
    assert_same_tensor(e, mt_st_find(ref, "lm_head.weight"));
    assert_ptr_not_equal(e->data, l->data);
    mt_st_close(bin);
    mt_st_close(ref);
}

static void test_tensors_equal_their_contiguous_copies(void **state)
{
    (void)state;
    check_tensors(FIXTURES "tensors.bin");
    /* protocol 5: FRAME, MEMOIZE, STACK_GLOBAL, SHORT_BINUNICODE instead of protocol 2's opcodes */
    check_tensors(FIXTURES "tensors_protocol5.bin");
}

/* save_pretrained(safe_serialization=True) leaves tied copies out; False keeps every key. */
static void check_model(const char *dir, const char *const *tied, int n_tied)
{
    char bin_path[256], st_path[256];
    snprintf(bin_path, sizeof bin_path, FIXTURES "%s/pytorch_model.bin", dir);
    snprintf(st_path, sizeof st_path, FIXTURES "%s/model.safetensors", dir);
    mt_safetensors *bin = mt_torch_open(bin_path);
    if (!bin) fail_msg("%s", mt_last_error());
    mt_safetensors *ref = mt_st_open(st_path);
    assert_non_null(ref);
    for (int i = 0; i < mt_st_count(ref); i++) {
        const mt_st_tensor *want = mt_st_tensor_at(ref, i);
        const mt_st_tensor *got = mt_st_find(bin, want->name);
        if (!got) fail_msg("%s: tensor '%s' missing", bin_path, want->name);
        assert_same_tensor(got, want);
    }
    assert_int_equal(mt_st_count(bin), mt_st_count(ref) + n_tied);
    for (int i = 0; i < n_tied; i++) {
        const mt_st_tensor *extra = mt_st_find(bin, tied[2 * i]);
        if (!extra) fail_msg("%s: tied tensor '%s' missing", bin_path, tied[2 * i]);
        assert_same_tensor(extra, mt_st_find(ref, tied[2 * i + 1]));
    }
    mt_st_close(bin);
    mt_st_close(ref);
}

static void test_marian_bin_equals_safetensors(void **state)
{
    (void)state;
    static const char *const tied[] = {
        "lm_head.weight",
        "model.shared.weight",
        "model.encoder.embed_tokens.weight",
        "model.shared.weight",
        "model.decoder.embed_tokens.weight",
        "model.shared.weight",
    };
    check_model("marian", tied, 3);
}

static void test_mamba_bin_equals_safetensors(void **state)
{
    (void)state;
    static const char *const tied[] = {"lm_head.weight", "backbone.embeddings.weight"};
    check_model("mamba", tied, 1);
}

static void test_nested_and_parameters(void **state)
{
    (void)state;
    mt_safetensors *ref = mt_st_open(FIXTURES "tensors.safetensors");
    mt_safetensors *nested = mt_torch_open(FIXTURES "nested.bin");
    if (!nested) fail_msg("%s", mt_last_error());
    assert_int_equal(mt_st_count(nested), 2); /* the "model" entry, not epoch or optimizer */
    assert_same_tensor(mt_st_find(nested, "a"), mt_st_find(ref, "f32"));
    assert_same_tensor(mt_st_find(nested, "b"), mt_st_find(ref, "i64"));
    /* the legacy format (torch < 1.6) of the same state_dict */
    mt_safetensors *legacy = mt_torch_open(FIXTURES "legacy.bin");
    if (!legacy) fail_msg("%s", mt_last_error());
    assert_int_equal(mt_st_count(legacy), 2);
    assert_same_tensor(mt_st_find(legacy, "a"), mt_st_find(ref, "f32"));
    assert_same_tensor(mt_st_find(legacy, "b"), mt_st_find(ref, "i64"));
    mt_st_close(legacy);
    mt_safetensors *params = mt_torch_open(FIXTURES "parameter.bin");
    if (!params) fail_msg("%s", mt_last_error());
    assert_int_equal(mt_st_count(params), 2);
    assert_same_tensor(mt_st_find(params, "w"), mt_st_find(ref, "f32"));
    float ones[3];
    assert_int_equal(mt_st_read_f32(params, "b", 1, (int64_t[]){3}, ones), 0);
    assert_true(ones[0] == 1 && ones[1] == 1 && ones[2] == 1);
    mt_st_close(nested);
    mt_st_close(params);
    mt_st_close(ref);
}

static void test_tensor_subclass_attributes(void **state)
{
    (void)state;
    mt_safetensors *ref = mt_st_open(FIXTURES "tensors.safetensors");
    mt_safetensors *st = mt_torch_open(FIXTURES "attributes.bin");
    if (!st) fail_msg("%s", mt_last_error());
    assert_int_equal(mt_st_count(st), 2);
    assert_same_tensor(mt_st_find(st, "a"), mt_st_find(ref, "f32"));
    float ones[3];
    assert_int_equal(mt_st_read_f32(st, "p", 1, (int64_t[]){3}, ones), 0);
    assert_true(ones[0] == 1 && ones[1] == 1 && ones[2] == 1);
    mt_st_close(st);
    mt_st_close(ref);
}

static void test_refused_files_are_named(void **state)
{
    (void)state;
    assert_null(mt_torch_open(FIXTURES "float8.bin"));
    assert_error_contains(
        FIXTURES "float8.bin: data.pkl refers to torch.float8_e4m3fn, which mtlab does not load");
    assert_null(mt_torch_open(FIXTURES "evil.bin"));
    assert_error_contains(FIXTURES
                          "evil.bin: data.pkl refers to posix.system, which mtlab does not load");
    assert_null(mt_torch_open(FIXTURES "tensors.safetensors"));
    assert_error_contains("tensors.safetensors: a safetensors file, not a PyTorch checkpoint");
    assert_null(mt_torch_open(FIXTURES "make_fixtures.py"));
    assert_error_contains(
        "make_fixtures.py: not a PyTorch checkpoint (neither a zip archive nor the legacy format)");
    assert_null(mt_torch_open(FIXTURES "no-such.bin"));
    assert_error_contains("no-such.bin: No such file or directory");
    assert_null(mt_torch_open(FIXTURES));
    assert_error_contains("is a directory");
    assert_null(mt_torch_open_buffer("", 0, "empty.bin"));
    assert_error_contains("empty.bin: not a PyTorch checkpoint");
}

/* ---------------------------------------------------------------- pickles built byte by byte */

typedef struct {
    unsigned char b[8192];
    size_t n;
} pickle;

static void pk_bytes(pickle *p, const void *data, size_t len)
{
    assert_true(p->n + len <= sizeof p->b);
    memcpy(p->b + p->n, data, len);
    p->n += len;
}

static void pk_op(pickle *p, unsigned char op) { pk_bytes(p, &op, 1); }

static void pk_str(pickle *p, const char *s)
{
    uint32_t len = (uint32_t)strlen(s);
    pk_op(p, 'X');
    pk_bytes(p, &len, 4);
    pk_bytes(p, s, len);
}

static void pk_int(pickle *p, int64_t v)
{
    if (v >= 0 && v < 256) {
        pk_op(p, 'K');
        pk_op(p, (unsigned char)v);
    } else {
        pk_op(p, 0x8a); /* LONG1, 8 bytes */
        pk_op(p, 8);
        pk_bytes(p, &v, 8);
    }
}

static void pk_global(pickle *p, const char *module, const char *name)
{
    pk_op(p, 'c');
    pk_bytes(p, module, strlen(module));
    pk_op(p, '\n');
    pk_bytes(p, name, strlen(name));
    pk_op(p, '\n');
}

static void pk_ints(pickle *p, const int64_t *v, int n)
{
    pk_op(p, '(');
    for (int i = 0; i < n; i++) pk_int(p, v[i]);
    pk_op(p, 't');
}

typedef struct {
    const char *storage_type; /* "FloatStorage" */
    const char *key; /* storage key */
    int64_t numel; /* of the storage */
    int64_t offset;
    int ndim;
    int64_t size[4], stride[4];
} tensor_spec;

/* _rebuild_tensor_v2((storage), offset, size, stride, False, OrderedDict()) as torch writes it. */
static void pk_tensor(pickle *p, const tensor_spec *t)
{
    pk_global(p, "torch._utils", "_rebuild_tensor_v2");
    pk_op(p, '(');
    pk_op(p, '(');
    pk_str(p, "storage");
    pk_global(p, "torch", t->storage_type);
    pk_str(p, t->key);
    pk_str(p, "cpu");
    pk_int(p, t->numel);
    pk_op(p, 't');
    pk_op(p, 'Q');
    pk_int(p, t->offset);
    pk_ints(p, t->size, t->ndim);
    pk_ints(p, t->stride, t->ndim);
    pk_op(p, 0x89);
    pk_global(p, "collections", "OrderedDict");
    pk_op(p, ')');
    pk_op(p, 'R');
    pk_op(p, 't');
    pk_op(p, 'R');
}

/* PROTO 2, OrderedDict(), MARK: entries follow, then pk_end. */
static void pk_begin(pickle *p)
{
    p->n = 0;
    pk_op(p, 0x80);
    pk_op(p, 2);
    pk_global(p, "collections", "OrderedDict");
    pk_op(p, ')');
    pk_op(p, 'R');
    pk_op(p, '(');
}

static void pk_end(pickle *p)
{
    pk_op(p, 'u');
    pk_op(p, '.');
}

/* Storages "0" .. "3" of 64 bytes each, holding bytes 0, 1, 2, ... */
static int test_check(void *ctx, const char *key, size_t nbytes)
{
    (void)ctx;
    if (strlen(key) != 1 || key[0] < '0' || key[0] > '3')
        return mt_error("storage '%s': none such", key);
    if (nbytes != 64) return mt_error("storage '%s': 64 bytes, data.pkl gives it %zu", key, nbytes);
    return 0;
}

static int test_load(void *ctx, const char *key, size_t nbytes, unsigned char **data)
{
    if (test_check(ctx, key, nbytes)) return -1;
    *data = malloc(64);
    for (int i = 0; i < 64; i++) (*data)[i] = (unsigned char)i;
    return 0;
}

static const torch_storages TEST_STORAGES = {test_check, test_load, NULL};

static mt_safetensors *read_pickle(const pickle *p)
{
    mt_clear_error();
    return torch_read_state_dict(p->b, p->n, "t.bin", &TEST_STORAGES);
}

static void expect_refused(const pickle *p, const char *needle)
{
    mt_safetensors *st = read_pickle(p);
    if (st) fail_msg("accepted a pickle that should fail with \"%s\"", needle);
    assert_error_contains(needle);
    assert_int_equal(strncmp(mt_last_error(), "t.bin: ", 7), 0);
}

static const tensor_spec GOOD = {"FloatStorage", "0", 16, 0, 2, {4, 4}, {4, 1}};

static void test_handmade_pickle_reads(void **state)
{
    (void)state;
    pickle p;
    pk_begin(&p);
    pk_str(&p, "w");
    pk_tensor(&p, &GOOD);
    pk_str(&p, "col"); /* column 1 of a (4, 4): offset 1, stride 4 */
    pk_tensor(&p, &(tensor_spec){"FloatStorage", "0", 16, 1, 1, {4}, {4}});
    pk_str(&p, "h"); /* a (2, 2) fp16 block from element 10 of storage 1, transposed */
    pk_tensor(&p, &(tensor_spec){"HalfStorage", "1", 32, 10, 2, {2, 2}, {1, 2}});
    pk_end(&p);
    mt_safetensors *st = read_pickle(&p);
    if (!st) fail_msg("%s", mt_last_error());
    assert_int_equal(mt_st_count(st), 3);
    const mt_st_tensor *col = mt_st_find(st, "col"), *h = mt_st_find(st, "h");
    const unsigned char *c = col->data, *hb = h->data;
    for (int i = 0; i < 4; i++) assert_int_equal(c[4 * i], 4 * (1 + 4 * i));
    /* elements (0,0) (0,1) (1,0) (1,1) sit at storage elements 10, 12, 11, 13 */
    static const int order[4] = {10, 12, 11, 13};
    for (int i = 0; i < 4; i++) assert_int_equal(hb[2 * i], 2 * order[i]);
    mt_st_close(st);
}

/* _rebuild_tensor_v3: an untyped (byte) storage read as the dtype given after the hooks. */
static void test_rebuild_tensor_v3(void **state)
{
    (void)state;
    pickle p;
    pk_begin(&p);
    pk_str(&p, "h");
    pk_global(&p, "torch._utils", "_rebuild_tensor_v3");
    pk_op(&p, '(');
    pk_op(&p, '(');
    pk_str(&p, "storage");
    pk_global(&p, "torch.storage", "UntypedStorage");
    pk_str(&p, "2");
    pk_str(&p, "cpu");
    pk_int(&p, 64);
    pk_op(&p, 't');
    pk_op(&p, 'Q');
    pk_int(&p, 2); /* offset, in float16 elements */
    pk_ints(&p, (int64_t[]){4}, 1);
    pk_ints(&p, (int64_t[]){2}, 1);
    pk_op(&p, 0x89);
    pk_op(&p, '}');
    pk_global(&p, "torch", "float16");
    pk_op(&p, 't');
    pk_op(&p, 'R');
    pk_end(&p);
    mt_safetensors *st = read_pickle(&p);
    if (!st) fail_msg("%s", mt_last_error());
    const mt_st_tensor *h = mt_st_find(st, "h");
    assert_int_equal(h->dtype, MT_DT_F16);
    assert_int_equal(h->numel, 4);
    const unsigned char *b = h->data;
    for (int i = 0; i < 4; i++) assert_int_equal(b[2 * i], 4 + 4 * i); /* bytes 4, 8, 12, 16 */
    mt_st_close(st);
}

static void test_globals_outside_the_allowlist(void **state)
{
    (void)state;
    pickle p = {0};
    pk_op(&p, 0x80);
    pk_op(&p, 2);
    pk_global(&p, "os", "system");
    pk_str(&p, "touch /tmp/mtlab-pwned");
    pk_op(&p, 0x85);
    pk_op(&p, 'R');
    pk_op(&p, '.');
    expect_refused(&p, "t.bin: data.pkl refers to os.system, which mtlab does not load");
    /* STACK_GLOBAL (protocol 4) the same */
    p.n = 2;
    pk_str(&p, "builtins");
    pk_str(&p, "eval");
    pk_op(&p, 0x93);
    pk_op(&p, '.');
    expect_refused(&p, "data.pkl refers to builtins.eval, which mtlab does not load");
    /* an allowed name called where it is only a name */
    p.n = 2;
    pk_global(&p, "torch", "FloatStorage");
    pk_op(&p, ')');
    pk_op(&p, 'R');
    pk_op(&p, '.');
    expect_refused(&p, "REDUCE calls torch.FloatStorage, which mtlab reads only as a name");
    /* a storage type mtlab has no dtype for */
    pk_begin(&p);
    pk_str(&p, "z");
    pk_tensor(&p, &(tensor_spec){"ComplexFloatStorage", "0", 8, 0, 1, {8}, {1}});
    pk_end(&p);
    expect_refused(&p, "refers to torch.ComplexFloatStorage, which mtlab does not load");
}

static void test_unknown_and_unread_opcodes(void **state)
{
    (void)state;
    pickle p = {0};
    pk_op(&p, 0x80);
    pk_op(&p, 2);
    pk_op(&p, 0xff);
    expect_refused(&p, "t.bin: data.pkl byte 2: unknown pickle opcode 0xff");
    p.n = 2;
    pk_op(&p, 'i'); /* INST: protocol 0's way of calling a class */
    expect_refused(
        &p, "pickle opcode INST (0x69), which torch.save does not write and mtlab does not read");
    p.n = 2;
    pk_op(&p, 0x81); /* NEWOBJ */
    expect_refused(&p, "opcode NEWOBJ");
    p.n = 0;
    pk_op(&p, 0x80);
    pk_op(&p, 9);
    expect_refused(&p, "pickle protocol 9");
}

/* Every proper prefix of a real data.pkl: an error naming the file, never a crash. */
static void test_every_truncation_of_a_real_pickle(void **state)
{
    (void)state;
    int err = 0;
    zip_t *za = zip_open(FIXTURES "tensors.bin", ZIP_RDONLY, &err);
    assert_non_null(za);
    zip_stat_t sb;
    assert_int_equal(zip_stat(za, "tensors/data.pkl", 0, &sb), 0);
    unsigned char *pkl = malloc(sb.size);
    zip_file_t *zf = zip_fopen(za, "tensors/data.pkl", 0);
    assert_int_equal(zip_fread(zf, pkl, sb.size), (zip_int64_t)sb.size);
    zip_fclose(zf);
    zip_discard(za);
    int truncated = 0;
    for (size_t len = 0; len < sb.size; len++) {
        mt_clear_error();
        mt_safetensors *st = torch_read_state_dict(pkl, len, "cut.bin", &TEST_STORAGES);
        if (st) fail_msg("a data.pkl cut at byte %zu was accepted", len);
        if (strncmp(mt_last_error(), "cut.bin: ", 9) != 0)
            fail_msg("cut at %zu: \"%s\"", len, mt_last_error());
        truncated += strstr(mt_last_error(), "(truncated?)") != NULL;
    }
    /* most cuts end inside an opcode or before STOP; the others leave a stack without a dict */
    assert_true(truncated > (int)sb.size / 2);
    free(pkl);
}

static void test_bad_stack_and_memo(void **state)
{
    (void)state;
    pickle p = {0};
    pk_op(&p, 0x80);
    pk_op(&p, 2);
    pk_op(&p, 's');
    expect_refused(&p, "data.pkl byte 2: SETITEM needs 3 values on the stack, it has 0");
    p.n = 2;
    pk_op(&p, 'h');
    pk_op(&p, 7);
    expect_refused(&p, "memo key 7 was never set");
    p.n = 2;
    pk_op(&p, 'N');
    pk_op(&p, 'r');
    pk_bytes(&p, "\xff\xff\xff\x7f", 4);
    expect_refused(&p, "memo key 2147483647 is larger than data.pkl");
    p.n = 2;
    pk_op(&p, ']');
    pk_op(&p, 'N');
    pk_op(&p, 's');
    expect_refused(&p, "SETITEM needs 3 values");
    p.n = 2;
    pk_op(&p, ']');
    pk_op(&p, 'N');
    pk_op(&p, 'N');
    pk_op(&p, 's');
    expect_refused(&p, "SETITEM on a list, not a dict");
    p.n = 2;
    pk_op(&p, 't');
    expect_refused(&p, "TUPLE without a MARK before it");
    p.n = 2;
    pk_op(&p, 'N');
    pk_op(&p, ')');
    pk_op(&p, 'b');
    expect_refused(&p, "BUILD on None");
    p.n = 2;
    pk_op(&p, 'X');
    pk_bytes(&p, "\xff\xff\xff\xff", 4);
    expect_refused(&p, "a string of 4294967295 bytes runs past the end");
    p.n = 2;
    pk_op(&p, 0x8a);
    pk_op(&p, 9);
    expect_refused(&p, "an integer of 9 bytes");
    p.n = 2;
    pk_op(&p, 'N');
    expect_refused(&p, "data.pkl ends at byte 3 without STOP (truncated?)");
}

static void test_not_a_state_dict(void **state)
{
    (void)state;
    pickle p = {0};
    pk_op(&p, 0x80);
    pk_op(&p, 2);
    pk_op(&p, ']');
    pk_op(&p, '.');
    expect_refused(&p, "t.bin: the checkpoint holds a list, not a state_dict");
    pk_begin(&p);
    pk_str(&p, "step");
    pk_int(&p, 7);
    pk_end(&p);
    expect_refused(&p, "t.bin: key 'step' holds an int, not a tensor");
    pk_begin(&p);
    pk_str(&p, "w");
    pk_tensor(&p, &GOOD);
    pk_str(&p, "w");
    pk_tensor(&p, &GOOD);
    pk_end(&p);
    expect_refused(&p, "t.bin: key 'w' appears twice");
    pk_begin(&p);
    pk_int(&p, 3);
    pk_tensor(&p, &GOOD);
    pk_end(&p);
    expect_refused(&p, "has a key that is an int, not a str");
    pk_begin(&p);
    pk_str(&p, "__metadata__");
    pk_tensor(&p, &GOOD);
    pk_end(&p);
    expect_refused(&p, "key '__metadata__' is reserved");
    pk_begin(&p);
    pk_str(&p, "bad\xff");
    pk_tensor(&p, &GOOD);
    pk_end(&p);
    expect_refused(&p, "is not valid UTF-8");
}

/* Each size, stride and offset against the storage, naming the key. */
static void test_tensor_against_its_storage(void **state)
{
    (void)state;
    static const struct {
        tensor_spec t;
        const char *error;
    } CASES[] = {
        {{"FloatStorage", "0", 16, 1, 2, {4, 4}, {4, 1}},
         "t.bin: tensor 'x': sizes (4, 4) with strides (4, 1) from offset 1 reach past the end of "
         "storage '0', "
         "which holds 16 float32 elements"},
        {{"FloatStorage", "0", 16, 0, 2, {4, 4}, {5, 1}}, "reach past the end of storage '0'"},
        {{"FloatStorage", "0", 16, 17, 1, {0}, {1}}, "from offset 17 reach past the end"},
        {{"FloatStorage", "0", 16, -1, 1, {1}, {1}},
         "t.bin: tensor 'x': storage offset -1 is negative"},
        {{"FloatStorage", "0", 16, 0, 2, {-4, 4}, {4, 1}},
         "tensor 'x': sizes (-4, 4) with strides (4, 1): negative"},
        {{"FloatStorage", "0", 16, 0, 2, {4, 4}, {-4, 1}}, "negative"},
        {{"FloatStorage", "0", 16, 0, 2, {1LL << 40, 1LL << 40}, {1, 1}}, "reach past the end"},
        {{"FloatStorage", "0", 16, 0, 2, {1LL << 62, 1LL << 62}, {1LL << 62, 1}},
         "reach past the end"},
        {{"FloatStorage", "0", 16, 0, 2, {1000, 16}, {0, 1}},
         "view 16000 elements of storage '0', which holds 16: an expanded view, which mtlab does "
         "not load"},
        {{"FloatStorage", "0", 15, 0, 1, {15}, {1}},
         "t.bin: tensor 'x': storage '0': 64 bytes, data.pkl gives it 60"},
        {{"FloatStorage", "9", 16, 0, 1, {16}, {1}}, "t.bin: tensor 'x': storage '9': none such"},
        {{"FloatStorage", "0", 1LL << 62, 0, 1, {16}, {1}},
         "storage '0' of 4611686018427387904 elements is too large"},
        {{"FloatStorage", "0", -1, 0, 1, {16}, {1}},
         "storage '0' has a size that is not a non-negative int"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        pickle p;
        pk_begin(&p);
        pk_str(&p, "x");
        pk_tensor(&p, &CASES[i].t);
        pk_end(&p);
        expect_refused(&p, CASES[i].error);
    }
    /* more dimensions than safetensors keeps, and strides that do not match the sizes */
    pickle p;
    pk_begin(&p);
    pk_str(&p, "x");
    tensor_spec nine = GOOD;
    pk_tensor(&p, &nine);
    pk_end(&p);
    /* rewrite the size tuple (K4 K4 t) of the one tensor as nine 1s */
    unsigned char *at = memmem(p.b, p.n, "(K\x04K\x04t(K\x04K\x01t", 12);
    assert_non_null(at);
    pickle q = {0};
    pk_bytes(&q, p.b, (size_t)(at - p.b));
    pk_ints(&q, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}, 9);
    pk_ints(&q, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}, 9);
    pk_bytes(&q, at + 12, p.n - (size_t)(at + 12 - p.b));
    expect_refused(&q, "t.bin: tensor 'x': 9 dimensions, mtlab reads at most 8");
    q.n = 0;
    pk_bytes(&q, p.b, (size_t)(at - p.b));
    pk_ints(&q, (int64_t[]){4, 4}, 2);
    pk_ints(&q, (int64_t[]){1}, 1);
    pk_bytes(&q, at + 12, p.n - (size_t)(at + 12 - p.b));
    expect_refused(&q, "t.bin: tensor 'x': 2 sizes but 1 strides");
}

/* One storage named over and over: each copy is a view of the same 64 bytes. */
static void test_copies_of_one_storage_are_bounded(void **state)
{
    (void)state;
    pickle p;
    for (int n = 8; n <= 9; n++) {
        pk_begin(&p);
        for (int i = 0; i < n; i++) {
            char key[8];
            snprintf(key, sizeof key, "k%d", i);
            pk_str(&p, key);
            pk_tensor(&p, &GOOD);
        }
        pk_end(&p);
        mt_safetensors *st = read_pickle(&p);
        if (n == 8) {
            if (!st) fail_msg("%s", mt_last_error());
            assert_int_equal(mt_st_count(st), 8);
            mt_st_close(st);
        } else {
            assert_null(st);
            assert_error_contains(
                "t.bin: the tensors copy 576 bytes out of 64 bytes of storages, more than 8 times");
        }
    }
}

/* legacy.bin changed at one place each, and cut at every length. */
static void test_legacy_format_damaged(void **state)
{
    (void)state;
    size_t len;
    unsigned char *orig = (unsigned char *)test_read_file(FIXTURES "legacy.bin", &len);
    assert_non_null(orig);
    unsigned char *data = malloc(len);
    /* the version, 1001 (BININT2 0xe9 0x03 after the 15 bytes of the magic number) */
    memcpy(data, orig, len);
    assert_memory_equal(data + 15, "\x80\x02M\xe9\x03.", 6);
    data[18] = 0xe8;
    assert_null(mt_torch_open_buffer(data, len, "old.bin"));
    assert_error_contains("old.bin: legacy format version 1000, mtlab reads 1001");
    /* little_endian False */
    memcpy(data, orig, len);
    unsigned char *le = memmem(data, len, "little_endian", 13);
    assert_non_null(le);
    unsigned char *flag = memchr(le + 13, 0x88, 4); /* NEWTRUE after the key and its BINPUT */
    assert_non_null(flag);
    *flag = 0x89;
    assert_null(mt_torch_open_buffer(data, len, "old.bin"));
    assert_error_contains("old.bin: a big-endian legacy checkpoint");
    /* the first storage's element count, 12, made huge; then one short of its bytes */
    memcpy(data, orig, len);
    size_t first = len - 104; /* two storages follow the pickles: 8 + 48 and 8 + 40 bytes */
    assert_int_equal(data[first], 12);
    data[first + 7] = 0x40;
    assert_null(mt_torch_open_buffer(data, len, "old.bin"));
    assert_error_contains("of 4611686018427387916 elements runs past the end of the file");
    /* the state_dict's storage size, 12 elements (BININT1 after "cpu" and its BINPUT), made 13 */
    memcpy(data, orig, len);
    unsigned char *cpu = memmem(data, len, "cpu", 3);
    assert_non_null(cpu);
    assert_memory_equal(cpu + 5, "K\x0c", 2);
    cpu[6] = 13;
    assert_null(mt_torch_open_buffer(data, len, "old.bin"));
    assert_error_contains("old.bin: tensor 'a': storage");
    assert_error_contains("the file holds 48 bytes of it, the state_dict gives it 52");
    /* the key list naming the first storage twice (its last key rewritten as the first) */
    memcpy(data, orig, len);
    unsigned char *list = data + 411, *last = NULL;
    for (unsigned char *at = list;
         (at = memmem(at, len - (size_t)(at - data), "X\x0e\x00\x00\x00", 5)); at += 5)
        last = at;
    assert_true(last > list);
    assert_memory_equal(list, "\x80\x02]q\x00(X",
                        7); /* PROTO 2, EMPTY_LIST, BINPUT 0, MARK, BINUNICODE */
    memcpy(last + 5, list + 11, 14);
    assert_null(mt_torch_open_buffer(data, len, "old.bin"));
    assert_error_contains("old.bin: storage '");
    assert_error_contains("' is listed twice");
    /* an unknown opcode in the state_dict pickle: the offset counts from the file's start */
    memcpy(data, orig, len);
    assert_int_equal(data[137], 0x80);
    data[139] = 0xff;
    assert_null(mt_torch_open_buffer(data, len, "old.bin"));
    assert_error_contains("old.bin: byte 139: unknown pickle opcode 0xff");
    for (size_t cut = 0; cut < len; cut++) {
        mt_clear_error();
        mt_safetensors *st = mt_torch_open_buffer(orig, cut, "old.bin");
        if (st) fail_msg("a legacy file cut at %zu of %zu bytes was accepted", cut, len);
        if (strncmp(mt_last_error(), "old.bin: ", 9) != 0)
            fail_msg("cut at %zu: \"%s\"", cut, mt_last_error());
    }
    free(data);
    free(orig);
}

/* ---------------------------------------------------------------- archives built with libzip */

typedef struct {
    const char *name;
    const void *data;
    size_t len;
    int deflate;
} member;

/* A zip archive of the members in memory (malloc'd), as torch.save lays it out. */
static unsigned char *make_zip(const member *m, int n, size_t *len)
{
    zip_error_t zerr;
    zip_error_init(&zerr);
    zip_source_t *out = zip_source_buffer_create(NULL, 0, 0, &zerr);
    assert_non_null(out);
    zip_source_keep(out);
    zip_t *za = zip_open_from_source(out, ZIP_TRUNCATE, &zerr);
    assert_non_null(za);
    for (int i = 0; i < n; i++) {
        zip_source_t *src = zip_source_buffer(za, m[i].data, m[i].len, 0);
        zip_int64_t idx = zip_file_add(za, m[i].name, src, ZIP_FL_ENC_RAW);
        assert_true(idx >= 0);
        assert_int_equal(zip_set_file_compression(za, (zip_uint64_t)idx,
                                                  m[i].deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0),
                         0);
    }
    assert_int_equal(zip_close(za), 0);
    zip_stat_t sb;
    assert_int_equal(zip_source_stat(out, &sb), 0);
    unsigned char *buf = malloc(sb.size);
    assert_int_equal(zip_source_open(out), 0);
    assert_int_equal(zip_source_read(out, buf, sb.size), (zip_int64_t)sb.size);
    zip_source_close(out);
    zip_source_free(out);
    *len = sb.size;
    return buf;
}

static mt_safetensors *open_zip(const member *m, int n)
{
    size_t len;
    unsigned char *zip = make_zip(m, n, &len);
    mt_clear_error();
    mt_safetensors *st = mt_torch_open_buffer(zip, len, "z.bin");
    free(zip);
    return st;
}

static void expect_zip_refused(const member *m, int n, const char *needle)
{
    mt_safetensors *st = open_zip(m, n);
    if (st) fail_msg("accepted an archive that should fail with \"%s\"", needle);
    assert_error_contains(needle);
    assert_int_equal(strncmp(mt_last_error(), "z.bin: ", 7), 0);
}

static void test_archives(void **state)
{
    (void)state;
    pickle p;
    pk_begin(&p);
    pk_str(&p, "w");
    pk_tensor(&p, &GOOD);
    pk_end(&p);
    unsigned char data[64];
    for (int i = 0; i < 64; i++) data[i] = (unsigned char)(i * 7);
    const member good[] = {
        {"a/data.pkl", p.b, p.n, 0}, {"a/byteorder", "little", 6, 0}, {"a/data/0", data, 64, 0}};
    mt_safetensors *st = open_zip(good, 3);
    if (!st) fail_msg("%s", mt_last_error());
    assert_memory_equal(mt_st_find(st, "w")->data, data, 64);
    mt_st_close(st);
    /* without byteorder (torch < 2.1) too */
    st = open_zip((member[]){good[0], good[2]}, 2);
    if (!st) fail_msg("%s", mt_last_error());
    mt_st_close(st);

    expect_zip_refused((member[]){good[0], {"a/byteorder", "big", 3, 0}, good[2]}, 3,
                       "z.bin: byte order 'big' (mtlab reads little-endian checkpoints only)");
    expect_zip_refused((member[]){good[0], good[1]}, 2,
                       "z.bin: tensor 'w': storage '0': no entry a/data/0 in the archive");
    expect_zip_refused(
        (member[]){good[0], good[1], {"a/data/0", data, 60, 0}}, 3,
        "z.bin: tensor 'w': storage '0': entry a/data/0 holds 60 bytes, data.pkl gives it 64");
    expect_zip_refused((member[]){good[0], good[1], {"a/data/0", data, 64, 1}}, 3,
                       "z.bin: tensor 'w': storage '0': entry a/data/0 is compressed (method 8)");
    expect_zip_refused((member[]){{"a/data.pkl", p.b, p.n, 1}, good[2]}, 2,
                       "z.bin: entry a/data.pkl is compressed");
    expect_zip_refused((member[]){good[1], good[2]}, 2,
                       "z.bin: a zip archive without ARCHIVE/data.pkl");
    expect_zip_refused((member[]){good[0], {"b/data.pkl", p.b, p.n, 0}, good[2]}, 3,
                       "z.bin: two data.pkl in the archive (a/data.pkl and b/data.pkl)");

    /* a damaged storage: libzip's CRC check names it */
    size_t len;
    unsigned char *zip = make_zip(good, 3, &len);
    unsigned char *stored = memmem(zip, len, data, 64);
    assert_non_null(stored);
    stored[10] ^= 1;
    mt_clear_error();
    assert_null(mt_torch_open_buffer(zip, len, "z.bin"));
    assert_error_contains("z.bin: tensor 'w': storage '0': entry a/data/0: CRC error");
    /* cut anywhere, the archive is an error naming the file, never a crash */
    stored[10] ^= 1;
    for (size_t cut = 0; cut < len; cut++) {
        mt_clear_error();
        mt_safetensors *cut_st = mt_torch_open_buffer(zip, cut, "z.bin");
        if (cut_st) fail_msg("an archive cut at %zu of %zu bytes was accepted", cut, len);
        if (strncmp(mt_last_error(), "z.bin: ", 7) != 0)
            fail_msg("cut at %zu: \"%s\"", cut, mt_last_error());
    }
    free(zip);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensors_equal_their_contiguous_copies),
        cmocka_unit_test(test_marian_bin_equals_safetensors),
        cmocka_unit_test(test_mamba_bin_equals_safetensors),
        cmocka_unit_test(test_nested_and_parameters),
        cmocka_unit_test(test_tensor_subclass_attributes),
        cmocka_unit_test(test_refused_files_are_named),
        cmocka_unit_test(test_rebuild_tensor_v3),
        cmocka_unit_test(test_handmade_pickle_reads),
        cmocka_unit_test(test_globals_outside_the_allowlist),
        cmocka_unit_test(test_unknown_and_unread_opcodes),
        cmocka_unit_test(test_every_truncation_of_a_real_pickle),
        cmocka_unit_test(test_bad_stack_and_memo),
        cmocka_unit_test(test_not_a_state_dict),
        cmocka_unit_test(test_tensor_against_its_storage),
        cmocka_unit_test(test_copies_of_one_storage_are_bounded),
        cmocka_unit_test(test_legacy_format_damaged),
        cmocka_unit_test(test_archives),
    };
    return cmocka_run_group_tests_name("torch_pickle", tests, NULL, NULL);
}
