/* A restricted unpickler for the data.pkl of a torch.save checkpoint (the state_dict it holds
 * becomes a safetensors image in torch_state_dict.c).
 *
 * The machine is pickle's: a stack of values, a mark stack, a memo. Values are plain data
 * (None, bools, ints, floats, strings, bytes, tuples, lists, dicts) plus four kinds that stand
 * for what torch.save writes through globals: an allowed global itself, a storage (from a
 * persistent id), a tensor (from a rebuild function) and a dict (from OrderedDict()). A
 * REDUCE of an allowed global is interpreted here, on plain data, by what that function would
 * compute; nothing is imported or called, and any other global is an error naming it.
 *
 * Every value is allocated in one list (st->values) and freed together: the memo may share
 * values and a list may even hold itself, so there is no ownership to track.
 * Sizes: every count the machine keeps (stack, marks, memo, values) grows by at most one per
 * opcode byte read, so memory is bounded by a multiple of data.pkl's length. */
#include "io/torch_pickle.h"
#include "io/torch_values.h"

#include "io/json_util.h"
#include "io/safetensors_image.h"
#include "mtlab/error.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "torch storages are read as little-endian bytes and copied as they are"
#endif

/* ---------------------------------------------------------------- values */

typedef enum {
    G_ORDERED_DICT,
    G_REBUILD_TENSOR, /* torch._utils._rebuild_tensor(storage, offset, size, stride) */
    G_REBUILD_TENSOR_V2, /* (storage, offset, size, stride, requires_grad, hooks[, metadata]) */
    G_REBUILD_TENSOR_V3, /* (storage, offset, size, stride, requires_grad, hooks, dtype[, metadata])
                          */
    G_REBUILD_PARAMETER, /* (tensor, requires_grad, hooks) */
    G_REBUILD_PARAMETER_WITH_STATE, /* (tensor, requires_grad, hooks, state) */
    G_REBUILD_FROM_TYPE_V2, /* torch._tensor._rebuild_from_type_v2(func, type, args, state) */
    G_TENSOR_TYPE, /* torch.Tensor, torch.nn.parameter.Parameter */
    G_STORAGE_TYPE, /* torch.FloatStorage, ... (a dtype each) */
    G_DTYPE, /* torch.float32, ... */
} global_kind;

static const struct {
    const char *module, *name;
    global_kind kind;
    mt_dtype dtype;
} GLOBALS[] = {
    {"collections", "OrderedDict", G_ORDERED_DICT, 0},
    {"torch._utils", "_rebuild_tensor", G_REBUILD_TENSOR, 0},
    {"torch._utils", "_rebuild_tensor_v2", G_REBUILD_TENSOR_V2, 0},
    {"torch._utils", "_rebuild_tensor_v3", G_REBUILD_TENSOR_V3, 0},
    {"torch._utils", "_rebuild_parameter", G_REBUILD_PARAMETER, 0},
    {"torch._utils", "_rebuild_parameter_with_state", G_REBUILD_PARAMETER_WITH_STATE, 0},
    {"torch._tensor", "_rebuild_from_type_v2", G_REBUILD_FROM_TYPE_V2, 0},
    {"torch", "Tensor", G_TENSOR_TYPE, 0},
    {"torch.nn.parameter", "Parameter", G_TENSOR_TYPE, 0},
    {"torch", "DoubleStorage", G_STORAGE_TYPE, MT_DT_F64},
    {"torch", "FloatStorage", G_STORAGE_TYPE, MT_DT_F32},
    {"torch", "HalfStorage", G_STORAGE_TYPE, MT_DT_F16},
    {"torch", "BFloat16Storage", G_STORAGE_TYPE, MT_DT_BF16},
    {"torch", "LongStorage", G_STORAGE_TYPE, MT_DT_I64},
    {"torch", "IntStorage", G_STORAGE_TYPE, MT_DT_I32},
    {"torch", "ShortStorage", G_STORAGE_TYPE, MT_DT_I16},
    {"torch", "CharStorage", G_STORAGE_TYPE, MT_DT_I8},
    {"torch", "ByteStorage", G_STORAGE_TYPE, MT_DT_U8},
    {"torch", "BoolStorage", G_STORAGE_TYPE, MT_DT_BOOL},
    {"torch", "UntypedStorage", G_STORAGE_TYPE, MT_DT_U8},
    {"torch.storage", "UntypedStorage", G_STORAGE_TYPE, MT_DT_U8}, /* as pickle names it */
    {"torch", "float64", G_DTYPE, MT_DT_F64},
    {"torch", "float32", G_DTYPE, MT_DT_F32},
    {"torch", "float16", G_DTYPE, MT_DT_F16},
    {"torch", "bfloat16", G_DTYPE, MT_DT_BF16},
    {"torch", "int64", G_DTYPE, MT_DT_I64},
    {"torch", "int32", G_DTYPE, MT_DT_I32},
    {"torch", "int16", G_DTYPE, MT_DT_I16},
    {"torch", "int8", G_DTYPE, MT_DT_I8},
    {"torch", "uint8", G_DTYPE, MT_DT_U8},
    {"torch", "bool", G_DTYPE, MT_DT_BOOL},
};
enum { N_GLOBALS = sizeof GLOBALS / sizeof GLOBALS[0] };

typedef struct {
    const char *file; /* the checkpoint, in messages */
    const char *part; /* the pickle, in messages: "data.pkl", "the pickle" */
    const char *at; /* before an offset: "data.pkl byte", "byte" */
    size_t base; /* offset of start in what messages count bytes of */
    const unsigned char *p, *end, *start;
    size_t op_at; /* byte offset of the opcode being run */
    value *values; /* every value made */
    value **stack;
    size_t n_stack, cap_stack;
    size_t *marks; /* stack heights at each MARK */
    size_t n_marks, cap_marks;
    value **memo; /* indexed by memo key; NULL = unset */
    size_t cap_memo, n_memo; /* n_memo: next key for MEMOIZE */
} unpickler;

static int pkl_error(const unpickler *u, const char *fmt, ...) MT_PRINTF(2, 3);
static int pkl_error(const unpickler *u, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return mt_error("%s: %s %zu: %s", u->file, u->at, u->base + u->op_at, what);
}

const char *torch_value_kind_name(const value *v)
{
    switch (v->kind) {
    case V_NONE: return "None";
    case V_BOOL: return "a bool";
    case V_INT: return "an int";
    case V_FLOAT: return "a float";
    case V_STR: return "a str";
    case V_BYTES: return "bytes";
    case V_TUPLE: return "a tuple";
    case V_LIST: return "a list";
    case V_DICT: return "a dict";
    case V_GLOBAL:
        return GLOBALS[v->u.global].kind == G_STORAGE_TYPE ? "a storage type"
               : GLOBALS[v->u.global].kind == G_DTYPE      ? "a dtype"
                                                           : "a function";
    case V_STORAGE: return "a storage";
    case V_TENSOR: return "a tensor";
    }
    return "?";
}

static value *new_value(unpickler *u, value_kind kind)
{
    value *v = mt_xcalloc(1, sizeof *v);
    v->kind = kind;
    v->next = u->values;
    u->values = v;
    return v;
}

static void free_values(value *v)
{
    while (v) {
        value *next = v->next;
        if (v->kind == V_STR || v->kind == V_BYTES) free(v->u.str.s);
        if (v->kind == V_TUPLE || v->kind == V_LIST || v->kind == V_DICT) free(v->u.seq.items);
        if (v->kind == V_STORAGE) free(v->u.st.key);
        if (v->kind == V_TENSOR) free(v->u.t);
        free(v);
        v = next;
    }
}

/* Grows *items so that it holds at least need elements of size. */
static void reserve(void *items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return;
    size_t cap2 = *cap ? *cap : 8;
    while (cap2 < need) cap2 *= 2;
    *(void **)items = mt_xrealloc(*(void **)items, cap2 * size);
    *cap = cap2;
}

static void seq_append(value *seq, value *item)
{
    reserve(&seq->u.seq.items, &seq->u.seq.cap, seq->u.seq.n + 1, sizeof *seq->u.seq.items);
    seq->u.seq.items[seq->u.seq.n++] = item;
}

static void push(unpickler *u, value *v)
{
    reserve(&u->stack, &u->cap_stack, u->n_stack + 1, sizeof *u->stack);
    u->stack[u->n_stack++] = v;
}

/* Values above the top mark: what the current opcode may pop. */
static size_t floor_of_stack(const unpickler *u)
{
    return u->n_marks ? u->marks[u->n_marks - 1] : 0;
}

static int need(const unpickler *u, const char *op, size_t n)
{
    size_t have = u->n_stack - floor_of_stack(u);
    if (have < n)
        return pkl_error(u, "%s needs %zu value%s on the stack, it has %zu", op, n,
                         n == 1 ? "" : "s", have);
    return 0;
}

static value *pop(unpickler *u) { return u->stack[--u->n_stack]; }

/* Pops the values above the top mark and the mark, into a new sequence of kind. */
static value *pop_mark(unpickler *u, const char *op, value_kind kind)
{
    if (!u->n_marks) {
        pkl_error(u, "%s without a MARK before it", op);
        return NULL;
    }
    size_t from = u->marks[--u->n_marks];
    value *seq = new_value(u, kind);
    size_t n = u->n_stack - from;
    if (n) {
        seq->u.seq.items = mt_xmalloc(n * sizeof *seq->u.seq.items);
        memcpy(seq->u.seq.items, u->stack + from, n * sizeof *seq->u.seq.items);
    }
    seq->u.seq.n = seq->u.seq.cap = n;
    u->n_stack = from;
    return seq;
}

/* ---------------------------------------------------------------- reading opcode arguments */

static const char *opcode_name(int op);

static int take(unpickler *u, size_t n, const unsigned char **out)
{
    if ((size_t)(u->end - u->p) < n)
        return mt_error("%s: %s ends inside opcode %s at byte %zu (truncated?)", u->file, u->part,
                        opcode_name(u->start[u->op_at]), u->base + u->op_at);
    *out = u->p;
    u->p += n;
    return 0;
}

static int take_le(unpickler *u, size_t n, uint64_t *out)
{
    const unsigned char *b = NULL;
    if (take(u, n, &b)) return -1;
    *out = 0;
    for (size_t i = n; i-- > 0;) *out = *out << 8 | b[i];
    return 0;
}

static value *new_str(unpickler *u, value_kind kind, const unsigned char *s, size_t len)
{
    value *v = new_value(u, kind);
    v->u.str.s = mt_xmalloc(len + 1);
    if (len) memcpy(v->u.str.s, s, len);
    v->u.str.s[len] = '\0';
    v->u.str.len = len;
    return v;
}

/* A string or bytes whose length is an n-byte little-endian prefix. */
static int op_counted(unpickler *u, size_t n, value_kind kind)
{
    uint64_t len;
    const unsigned char *s = NULL;
    if (take_le(u, n, &len)) return -1;
    if (len > (uint64_t)(u->end - u->p))
        return pkl_error(u, "a string of %" PRIu64 " bytes runs past the end (%zu bytes left)", len,
                         (size_t)(u->end - u->p));
    if (take(u, (size_t)len, &s)) return -1;
    push(u, new_str(u, kind, s, (size_t)len));
    return 0;
}

/* A line ending in '\n' (GLOBAL's module and name), at most 255 bytes. */
static int take_line(unpickler *u, char *buf, size_t size)
{
    const unsigned char *nl = memchr(u->p, '\n', (size_t)(u->end - u->p));
    if (!nl) return take(u, (size_t)(u->end - u->p) + 1, &nl);
    size_t len = (size_t)(nl - u->p);
    if (len >= size) return pkl_error(u, "GLOBAL name longer than %zu bytes", size - 1);
    memcpy(buf, u->p, len);
    buf[len] = '\0';
    u->p = nl + 1;
    return 0;
}

static value *new_int(unpickler *u, int64_t i)
{
    value *v = new_value(u, V_INT);
    v->u.i = i;
    return v;
}

/* LONG1/LONG4: n bytes, little-endian two's complement. */
static int op_long(unpickler *u, size_t n_size)
{
    uint64_t n;
    const unsigned char *b = NULL;
    if (take_le(u, n_size, &n)) return -1;
    if (n > 8) return pkl_error(u, "an integer of %" PRIu64 " bytes (mtlab reads at most 8)", n);
    if (take(u, (size_t)n, &b)) return -1;
    uint64_t x = 0;
    for (size_t i = (size_t)n; i-- > 0;) x = x << 8 | b[i];
    if (n > 0 && n < 8 && (b[n - 1] & 0x80)) x |= ~(uint64_t)0 << (8 * n);
    push(u, new_int(u, (int64_t)x));
    return 0;
}

/* ---------------------------------------------------------------- globals */

static int find_global(const char *module, const char *name)
{
    for (int i = 0; i < N_GLOBALS; i++)
        if (strcmp(GLOBALS[i].module, module) == 0 && strcmp(GLOBALS[i].name, name) == 0) return i;
    return -1;
}

static int push_global(unpickler *u, const char *module, const char *name)
{
    int g = find_global(module, name);
    if (g < 0) {
        char m[128], n[128];
        return mt_error("%s: %s refers to %s.%s, which mtlab does not load", u->file, u->part,
                        printable_text(m, sizeof m, module), printable_text(n, sizeof n, name));
    }
    value *v = new_value(u, V_GLOBAL);
    v->u.global = g;
    push(u, v);
    return 0;
}

static int op_global(unpickler *u)
{
    char module[256], name[256];
    if (take_line(u, module, sizeof module) || take_line(u, name, sizeof name)) return -1;
    return push_global(u, module, name);
}

static int op_stack_global(unpickler *u)
{
    if (need(u, "STACK_GLOBAL", 2)) return -1;
    value *name = pop(u), *module = pop(u);
    if (module->kind != V_STR || name->kind != V_STR)
        return pkl_error(u, "STACK_GLOBAL of %s and %s, expected two str",
                         torch_value_kind_name(module), torch_value_kind_name(name));
    if (strlen(module->u.str.s) != module->u.str.len || strlen(name->u.str.s) != name->u.str.len)
        return pkl_error(u, "STACK_GLOBAL name holds a NUL byte");
    return push_global(u, module->u.str.s, name->u.str.s);
}

static int global_is(const value *v, global_kind kind)
{
    return v->kind == V_GLOBAL && GLOBALS[v->u.global].kind == kind;
}

/* ---------------------------------------------------------------- persistent ids: storages */

/* ('storage', storage_type, key, location, numel): how torch.save names a storage. */
static int op_binpersid(unpickler *u)
{
    if (need(u, "BINPERSID", 1)) return -1;
    value *pid = pop(u);
    value **f = pid->u.seq.items;
    if (pid->kind != V_TUPLE || pid->u.seq.n < 5 || pid->u.seq.n > 6 || f[0]->kind != V_STR ||
        strcmp(f[0]->u.str.s, "storage") != 0)
        return pkl_error(u, "a persistent id that is not ('storage', type, key, location, numel)");
    /* the legacy format's sixth field: a view of another storage, which torch >= 0.4 never writes
     */
    if (pid->u.seq.n == 6 && f[5]->kind != V_NONE)
        return pkl_error(
            u, "a storage that is a view of another (legacy format), which mtlab does not read");
    if (!global_is(f[1], G_STORAGE_TYPE))
        return pkl_error(u, "a storage whose type is %s, not a storage type",
                         torch_value_kind_name(f[1]));
    if (f[2]->kind != V_STR || strlen(f[2]->u.str.s) != f[2]->u.str.len)
        return pkl_error(u, "a storage whose key is %s, not a str", torch_value_kind_name(f[2]));
    if (f[3]->kind != V_STR)
        return pkl_error(u, "a storage whose location is %s, not a str",
                         torch_value_kind_name(f[3]));
    if (f[4]->kind != V_INT || f[4]->u.i < 0)
        return pkl_error(u, "storage '%s' has a size that is not a non-negative int",
                         f[2]->u.str.s);
    mt_dtype dt = GLOBALS[f[1]->u.global].dtype;
    size_t nbytes;
    if ((uint64_t)f[4]->u.i > SIZE_MAX ||
        __builtin_mul_overflow((size_t)f[4]->u.i, mt_dtype_size(dt), &nbytes))
        return pkl_error(u, "storage '%s' of %" PRId64 " elements is too large", f[2]->u.str.s,
                         f[4]->u.i);
    value *v = new_value(u, V_STORAGE);
    v->u.st.key = mt_xstrdup(f[2]->u.str.s);
    v->u.st.dtype = dt;
    v->u.st.nbytes = nbytes;
    push(u, v);
    return 0;
}

/* ---------------------------------------------------------------- REDUCE: the allowed calls */

static int int_tuple(const unpickler *u, const char *what, const value *v, int64_t *out, size_t *n)
{
    if (v->kind != V_TUPLE)
        return pkl_error(u, "tensor %s is %s, expected a tuple of ints", what,
                         torch_value_kind_name(v));
    *n = v->u.seq.n;
    for (size_t d = 0; d < v->u.seq.n; d++) {
        if (v->u.seq.items[d]->kind != V_INT)
            return pkl_error(u, "tensor %s holds %s, expected ints", what,
                             torch_value_kind_name(v->u.seq.items[d]));
        if (d < MT_ST_MAX_DIMS) out[d] = v->u.seq.items[d]->u.i;
    }
    return 0;
}

static const char *fn_name(int g)
{
    static _Thread_local char buf[96];
    snprintf(buf, sizeof buf, "%s.%s", GLOBALS[g].module, GLOBALS[g].name);
    return buf;
}

/* _rebuild_tensor, _v2 and _v3: the storage, offset, size and stride come first in each. */
static int rebuild_tensor(unpickler *u, int g, const value *args, value **out)
{
    size_t n = args->u.seq.n;
    global_kind kind = GLOBALS[g].kind;
    int ok = kind == G_REBUILD_TENSOR      ? n == 4
             : kind == G_REBUILD_TENSOR_V2 ? n == 6 || n == 7
                                           : n == 7 || n == 8;
    if (!ok) return pkl_error(u, "%s with %zu arguments", fn_name(g), n);
    value **a = args->u.seq.items;
    if (a[0]->kind != V_STORAGE)
        return pkl_error(u, "%s of %s, not a storage", fn_name(g), torch_value_kind_name(a[0]));
    if (a[1]->kind != V_INT)
        return pkl_error(u, "tensor offset is %s, expected an int", torch_value_kind_name(a[1]));
    value *v = new_value(u, V_TENSOR);
    tensor *t = v->u.t = mt_xcalloc(1, sizeof *t);
    t->storage = a[0];
    t->dtype = a[0]->u.st.dtype;
    t->offset = a[1]->u.i;
    if (int_tuple(u, "size", a[2], t->size, &t->ndim) ||
        int_tuple(u, "stride", a[3], t->stride, &t->n_strides))
        return -1;
    if (kind == G_REBUILD_TENSOR_V3) {
        if (!global_is(a[6], G_DTYPE))
            return pkl_error(u, "tensor dtype is %s, expected a torch dtype",
                             torch_value_kind_name(a[6]));
        t->dtype = GLOBALS[a[6]->u.global].dtype;
    }
    *out = v;
    return 0;
}

static int reduce_call(unpickler *u, int g, const value *args, value **out)
{
    value **a = args->u.seq.items;
    size_t n = args->u.seq.n;
    switch (GLOBALS[g].kind) {
    case G_ORDERED_DICT:
        if (n != 0)
            return pkl_error(
                u, "collections.OrderedDict with arguments (mtlab reads only OrderedDict())");
        *out = new_value(u, V_DICT);
        return 0;
    case G_REBUILD_TENSOR:
    case G_REBUILD_TENSOR_V2:
    case G_REBUILD_TENSOR_V3: return rebuild_tensor(u, g, args, out);
    case G_REBUILD_PARAMETER:
    case G_REBUILD_PARAMETER_WITH_STATE:
        if (n != (GLOBALS[g].kind == G_REBUILD_PARAMETER ? 3u : 4u))
            return pkl_error(u, "%s with %zu arguments", fn_name(g), n);
        if (a[0]->kind != V_TENSOR)
            return pkl_error(u, "%s of %s, not a tensor", fn_name(g), torch_value_kind_name(a[0]));
        *out = a[0];
        return 0;
    case G_REBUILD_FROM_TYPE_V2: {
        /* func(*args) made into type: the data is func's; the type and state only decorate it */
        if (n != 4) return pkl_error(u, "%s with %zu arguments", fn_name(g), n);
        if (a[0]->kind != V_GLOBAL || GLOBALS[a[0]->u.global].kind == G_REBUILD_FROM_TYPE_V2 ||
            GLOBALS[a[0]->u.global].kind > G_REBUILD_FROM_TYPE_V2)
            return pkl_error(u, "%s of %s, not a tensor rebuild function", fn_name(g),
                             torch_value_kind_name(a[0]));
        if (!global_is(a[1], G_TENSOR_TYPE))
            return pkl_error(u, "%s to %s, not a tensor type", fn_name(g),
                             torch_value_kind_name(a[1]));
        if (a[2]->kind != V_TUPLE)
            return pkl_error(u, "%s with arguments in %s, not a tuple", fn_name(g),
                             torch_value_kind_name(a[2]));
        int rc = reduce_call(u, a[0]->u.global, a[2], out);
        if (!rc && (*out)->kind != V_TENSOR)
            return pkl_error(u, "%s made %s, not a tensor", fn_name(g),
                             torch_value_kind_name(*out));
        return rc;
    }
    case G_TENSOR_TYPE:
    case G_STORAGE_TYPE:
    case G_DTYPE: break;
    }
    return pkl_error(u, "REDUCE calls %s, which mtlab reads only as a name", fn_name(g));
}

static int op_reduce(unpickler *u)
{
    if (need(u, "REDUCE", 2)) return -1;
    value *args = pop(u), *fn = pop(u);
    if (fn->kind != V_GLOBAL)
        return pkl_error(u, "REDUCE calls %s, not a function", torch_value_kind_name(fn));
    if (args->kind != V_TUPLE)
        return pkl_error(u, "REDUCE with arguments in %s, not a tuple",
                         torch_value_kind_name(args));
    value *out;
    if (reduce_call(u, fn->u.global, args, &out)) return -1;
    push(u, out);
    return 0;
}

/* BUILD sets an object's state: OrderedDict's attributes (state_dict's _metadata, module
 * versions) and a tensor's Python attributes mean nothing for the weights. */
static int op_build(unpickler *u)
{
    if (need(u, "BUILD", 2)) return -1;
    value *state = pop(u), *obj = u->stack[u->n_stack - 1];
    (void)state;
    if (obj->kind != V_DICT && obj->kind != V_TENSOR)
        return pkl_error(u, "BUILD on %s (mtlab sets state only on dicts and tensors)",
                         torch_value_kind_name(obj));
    return 0;
}

/* ---------------------------------------------------------------- the memo */

static int memo_put(unpickler *u, uint64_t key)
{
    if (need(u, "PUT", 1)) return -1;
    /* torch (and pickle) number memo entries 0, 1, 2, ...: one entry costs at least a byte */
    if (key >= (uint64_t)(u->end - u->start))
        return pkl_error(u, "memo key %" PRIu64 " is larger than %s (%zu bytes)", key, u->part,
                         (size_t)(u->end - u->start));
    reserve(&u->memo, &u->cap_memo, (size_t)key + 1, sizeof *u->memo);
    for (size_t i = u->n_memo; i <= key && i < u->cap_memo; i++) u->memo[i] = NULL;
    if (key >= u->n_memo) u->n_memo = (size_t)key + 1;
    u->memo[key] = u->stack[u->n_stack - 1];
    return 0;
}

static int memo_get(unpickler *u, uint64_t key)
{
    if (key >= u->n_memo || !u->memo[key])
        return pkl_error(u, "memo key %" PRIu64 " was never set", key);
    push(u, u->memo[key]);
    return 0;
}

/* ---------------------------------------------------------------- containers */

static int op_setitems(unpickler *u, int many)
{
    value *dict;
    size_t from;
    if (many) {
        if (!u->n_marks) return pkl_error(u, "SETITEMS without a MARK before it");
        from = u->marks[u->n_marks - 1];
        if (from == 0) return pkl_error(u, "SETITEMS with no dict below its MARK");
        dict = u->stack[from - 1];
        if ((u->n_stack - from) % 2) return pkl_error(u, "SETITEMS with an odd number of values");
    } else {
        if (need(u, "SETITEM", 3)) return -1;
        from = u->n_stack - 2;
        dict = u->stack[from - 1];
    }
    if (dict->kind != V_DICT)
        return pkl_error(u, "SETITEM%s on %s, not a dict", many ? "S" : "",
                         torch_value_kind_name(dict));
    for (size_t i = from; i < u->n_stack; i++) seq_append(dict, u->stack[i]);
    u->n_stack = from;
    if (many) u->n_marks--;
    return 0;
}

static int op_appends(unpickler *u, int many)
{
    value *list;
    size_t from;
    if (many) {
        if (!u->n_marks) return pkl_error(u, "APPENDS without a MARK before it");
        from = u->marks[u->n_marks - 1];
        if (from == 0) return pkl_error(u, "APPENDS with no list below its MARK");
    } else {
        if (need(u, "APPEND", 2)) return -1;
        from = u->n_stack - 1;
    }
    list = u->stack[from - 1];
    if (list->kind != V_LIST)
        return pkl_error(u, "APPEND%s on %s, not a list", many ? "S" : "",
                         torch_value_kind_name(list));
    for (size_t i = from; i < u->n_stack; i++) seq_append(list, u->stack[i]);
    u->n_stack = from;
    if (many) u->n_marks--;
    return 0;
}

static int op_tuple_n(unpickler *u, size_t n)
{
    static const char *const NAMES[] = {"EMPTY_TUPLE", "TUPLE1", "TUPLE2", "TUPLE3"};
    if (need(u, NAMES[n], n)) return -1;
    value *t = new_value(u, V_TUPLE);
    if (n) {
        t->u.seq.items = mt_xmalloc(n * sizeof *t->u.seq.items);
        memcpy(t->u.seq.items, u->stack + u->n_stack - n, n * sizeof *t->u.seq.items);
    }
    t->u.seq.n = t->u.seq.cap = n;
    u->n_stack -= n;
    push(u, t);
    return 0;
}

/* ---------------------------------------------------------------- the opcode loop */

static const struct {
    unsigned char code;
    const char *name;
} OPCODE_NAMES[] = {
    {'(', "MARK"},
    {'.', "STOP"},
    {'0', "POP"},
    {'1', "POP_MARK"},
    {'2', "DUP"},
    {'F', "FLOAT"},
    {'I', "INT"},
    {'J', "BININT"},
    {'K', "BININT1"},
    {'L', "LONG"},
    {'M', "BININT2"},
    {'N', "NONE"},
    {'P', "PERSID"},
    {'Q', "BINPERSID"},
    {'R', "REDUCE"},
    {'S', "STRING"},
    {'T', "BINSTRING"},
    {'U', "SHORT_BINSTRING"},
    {'V', "UNICODE"},
    {'X', "BINUNICODE"},
    {'a', "APPEND"},
    {'b', "BUILD"},
    {'c', "GLOBAL"},
    {'d', "DICT"},
    {'}', "EMPTY_DICT"},
    {'e', "APPENDS"},
    {'g', "GET"},
    {'h', "BINGET"},
    {'i', "INST"},
    {'j', "LONG_BINGET"},
    {'l', "LIST"},
    {']', "EMPTY_LIST"},
    {'o', "OBJ"},
    {'p', "PUT"},
    {'q', "BINPUT"},
    {'r', "LONG_BINPUT"},
    {'s', "SETITEM"},
    {'t', "TUPLE"},
    {')', "EMPTY_TUPLE"},
    {'u', "SETITEMS"},
    {'G', "BINFLOAT"},
    {0x80, "PROTO"},
    {0x81, "NEWOBJ"},
    {0x82, "EXT1"},
    {0x83, "EXT2"},
    {0x84, "EXT4"},
    {0x85, "TUPLE1"},
    {0x86, "TUPLE2"},
    {0x87, "TUPLE3"},
    {0x88, "NEWTRUE"},
    {0x89, "NEWFALSE"},
    {0x8a, "LONG1"},
    {0x8b, "LONG4"},
    {'B', "BINBYTES"},
    {'C', "SHORT_BINBYTES"},
    {0x8c, "SHORT_BINUNICODE"},
    {0x8d, "BINUNICODE8"},
    {0x8e, "BINBYTES8"},
    {0x8f, "EMPTY_SET"},
    {0x90, "ADDITEMS"},
    {0x91, "FROZENSET"},
    {0x92, "NEWOBJ_EX"},
    {0x93, "STACK_GLOBAL"},
    {0x94, "MEMOIZE"},
    {0x95, "FRAME"},
    {0x96, "BYTEARRAY8"},
    {0x97, "NEXT_BUFFER"},
    {0x98, "READONLY_BUFFER"},
};

static const char *opcode_name(int op)
{
    for (size_t i = 0; i < sizeof OPCODE_NAMES / sizeof OPCODE_NAMES[0]; i++)
        if (OPCODE_NAMES[i].code == op) return OPCODE_NAMES[i].name;
    return "?";
}

/* One opcode; 1 at STOP, 0 to go on, -1 on an error. */
static int step(unpickler *u, value **result)
{
    u->op_at = (size_t)(u->p - u->start);
    int op = *u->p++;
    uint64_t n;
    const unsigned char *b = NULL;
    value *v;
    switch (op) {
    case 0x80: /* PROTO */
        if (take_le(u, 1, &n)) return -1;
        if (n > 5) return pkl_error(u, "pickle protocol %" PRIu64 " (Python knows 0 to 5)", n);
        return 0;
    case 0x95: /* FRAME: a length prefix that only helps buffered readers */
        return take_le(u, 8, &n);
    case '.': /* STOP */
        if (need(u, "STOP", 1)) return -1;
        *result = pop(u);
        return 1;
    case '(':
        reserve(&u->marks, &u->cap_marks, u->n_marks + 1, sizeof *u->marks);
        u->marks[u->n_marks++] = u->n_stack;
        return 0;
    case '1': /* POP_MARK */
        if (!u->n_marks) return pkl_error(u, "POP_MARK without a MARK before it");
        u->n_stack = u->marks[--u->n_marks];
        return 0;
    case '0': /* POP */
        if (need(u, "POP", 1)) return -1;
        u->n_stack--;
        return 0;
    case '2': /* DUP */
        if (need(u, "DUP", 1)) return -1;
        push(u, u->stack[u->n_stack - 1]);
        return 0;
    case 'N': push(u, new_value(u, V_NONE)); return 0;
    case 0x88:
    case 0x89:
        v = new_value(u, V_BOOL);
        v->u.i = op == 0x88;
        push(u, v);
        return 0;
    case 'J':
        if (take_le(u, 4, &n)) return -1;
        push(u, new_int(u, (int32_t)(uint32_t)n));
        return 0;
    case 'K':
    case 'M':
        if (take_le(u, op == 'K' ? 1 : 2, &n)) return -1;
        push(u, new_int(u, (int64_t)n));
        return 0;
    case 0x8a: return op_long(u, 1);
    case 0x8b: return op_long(u, 4);
    case 'G': {
        if (take(u, 8, &b)) return -1;
        uint64_t bits = 0;
        for (int i = 0; i < 8; i++) bits = bits << 8 | b[i]; /* big-endian */
        v = new_value(u, V_FLOAT);
        memcpy(&v->u.f, &bits, sizeof bits);
        push(u, v);
        return 0;
    }
    case 'X': return op_counted(u, 4, V_STR);
    case 0x8c: return op_counted(u, 1, V_STR);
    case 0x8d: return op_counted(u, 8, V_STR);
    case 'T': return op_counted(u, 4, V_STR);
    case 'U': return op_counted(u, 1, V_STR);
    case 'B': return op_counted(u, 4, V_BYTES);
    case 'C': return op_counted(u, 1, V_BYTES);
    case 0x8e: return op_counted(u, 8, V_BYTES);
    case '}': push(u, new_value(u, V_DICT)); return 0;
    case ']': push(u, new_value(u, V_LIST)); return 0;
    case ')': return op_tuple_n(u, 0);
    case 0x85: return op_tuple_n(u, 1);
    case 0x86: return op_tuple_n(u, 2);
    case 0x87: return op_tuple_n(u, 3);
    case 't':
        if (!(v = pop_mark(u, "TUPLE", V_TUPLE))) return -1;
        push(u, v);
        return 0;
    case 'l': /* LIST: protocol 1, but as plain as TUPLE */
        if (!(v = pop_mark(u, "LIST", V_LIST))) return -1;
        push(u, v);
        return 0;
    case 's': return op_setitems(u, 0);
    case 'u': return op_setitems(u, 1);
    case 'a': return op_appends(u, 0);
    case 'e': return op_appends(u, 1);
    case 'q':
        if (take_le(u, 1, &n)) return -1;
        return memo_put(u, n);
    case 'r':
        if (take_le(u, 4, &n)) return -1;
        return memo_put(u, n);
    case 0x94: return memo_put(u, u->n_memo);
    case 'h':
        if (take_le(u, 1, &n)) return -1;
        return memo_get(u, n);
    case 'j':
        if (take_le(u, 4, &n)) return -1;
        return memo_get(u, n);
    case 'c': return op_global(u);
    case 0x93: return op_stack_global(u);
    case 'R': return op_reduce(u);
    case 'b': return op_build(u);
    case 'Q': return op_binpersid(u);
    }
    if (strcmp(opcode_name(op), "?") == 0) return pkl_error(u, "unknown pickle opcode 0x%02x", op);
    return pkl_error(
        u, "pickle opcode %s (0x%02x), which torch.save does not write and mtlab does not read",
        opcode_name(op), op);
}

static int unpickle(unpickler *u, value **result)
{
    while (u->p < u->end) {
        int rc = step(u, result);
        if (rc) return rc < 0 ? -1 : 0;
    }
    return mt_error("%s: %s ends at byte %zu without STOP (truncated?)", u->file, u->part,
                    u->base + (size_t)(u->end - u->start));
}

const value *torch_dict_get(const value *dict, const char *key)
{
    for (size_t i = 0; i + 1 < dict->u.seq.n; i += 2) {
        const value *k = dict->u.seq.items[i];
        if (k->kind == V_STR && strcmp(k->u.str.s, key) == 0) return dict->u.seq.items[i + 1];
    }
    return NULL;
}

struct torch_pickle {
    unpickler u;
    value *top;
    const storage *
        *by_key; /* (n_by_key) every storage the pickle names, sorted by key; made on demand */
    size_t n_by_key;
};

void torch_pickle_free(torch_pickle *tp)
{
    if (!tp) return;
    free_values(tp->u.values);
    free(tp->u.stack);
    free(tp->u.marks);
    free(tp->u.memo);
    free(tp->by_key);
    free(tp);
}

torch_pickle *torch_unpickle(const unsigned char *pkl, size_t len, const char *file, size_t base,
                             size_t *used)
{
    if (len > TORCH_MAX_PICKLE) {
        mt_error("%s: a pickle of %zu bytes, more than the %d a checkpoint needs", file, len,
                 TORCH_MAX_PICKLE);
        return NULL;
    }
    torch_pickle *tp = mt_xcalloc(1, sizeof *tp);
    tp->u = (unpickler){.file = file,
                        .part = base ? "the pickle" : "data.pkl",
                        .at = base ? "byte" : "data.pkl byte",
                        .base = base,
                        .p = pkl,
                        .start = pkl,
                        .end = pkl + len};
    if (unpickle(&tp->u, &tp->top)) {
        torch_pickle_free(tp);
        return NULL;
    }
    if (used) *used = (size_t)(tp->u.p - pkl);
    return tp;
}

const value *torch_pickle_top(const torch_pickle *tp) { return tp->top; }

const char *torch_pickle_file(const torch_pickle *tp) { return tp->u.file; }

int torch_pickle_int(const torch_pickle *tp, int64_t *out)
{
    if (tp->top->kind != V_INT) return -1;
    *out = tp->top->u.i;
    return 0;
}

int torch_pickle_flag(const torch_pickle *tp, const char *key)
{
    const value *v = tp->top->kind == V_DICT ? torch_dict_get(tp->top, key) : NULL;
    return v && v->kind == V_BOOL && v->u.i;
}

size_t torch_pickle_strings(const torch_pickle *tp, size_t i, const char **s)
{
    const value *v = tp->top;
    if (v->kind != V_LIST && v->kind != V_TUPLE) return 0;
    if (i < v->u.seq.n) *s = v->u.seq.items[i]->kind == V_STR ? v->u.seq.items[i]->u.str.s : NULL;
    return v->u.seq.n;
}

static int storage_key_order(const void *a, const void *b)
{
    return strcmp((*(const storage *const *)a)->key, (*(const storage *const *)b)->key);
}

size_t torch_pickle_storage_elem_size(torch_pickle *tp, const char *key)
{
    if (!tp->by_key) {
        size_t n = 0;
        for (const value *v = tp->u.values; v; v = v->next) n += v->kind == V_STORAGE;
        tp->by_key = mt_xmalloc((n + 1) * sizeof *tp->by_key);
        for (const value *v = tp->u.values; v; v = v->next)
            if (v->kind == V_STORAGE) tp->by_key[tp->n_by_key++] = &v->u.st;
        qsort(tp->by_key, tp->n_by_key, sizeof *tp->by_key, storage_key_order);
    }
    const storage want = {.key = (char *)key}, *wantp = &want;
    const storage **found = tp->n_by_key ? bsearch(&wantp, tp->by_key, tp->n_by_key,
                                                   sizeof *tp->by_key, storage_key_order)
                                         : NULL;
    return found ? mt_dtype_size((*found)->dtype) : 0;
}
