/* The state_dict a torch checkpoint's pickle holds, copied out as a safetensors image: every
 * tensor's size, stride and offset checked against its storage, non-contiguous views copied
 * contiguous, shared storages copied once per tensor (within MAX_COPIES), then opened through
 * the same validation as a model.safetensors file. */
#include "io/torch_values.h"

#include "io/json_util.h"
#include "io/safetensors_image.h"
#include "mtlab/error.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Shared storages are copied once per tensor that views them (tied embeddings: Marian names
 * one storage four times). A file asking for more than this many copies of its storages in
 * total is refused rather than expanded (a short pickle can name one storage a million times). */
enum { MAX_COPIES = 8 };

typedef struct {
    const char *name; /* the key */
    const tensor *t;
    size_t nbytes; /* numel * dtype size */
    size_t offset; /* in the image's data section */
} entry;

static int entry_error(const char *file, const char *name, const char *fmt, ...) MT_PRINTF(3, 4);
static int entry_error(const char *file, const char *name, const char *fmt, ...)
{
    char what[512], quoted[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return mt_error("%s: tensor '%s': %s", file, printable_text(quoted, sizeof quoted, name), what);
}

/* The pickled dict itself, or (checkpoints written by training scripts) its "state_dict" or
 * "model" entry, one or two levels down. */
static const value *find_state_dict(const char *file, const value *top)
{
    if (top->kind != V_DICT) {
        mt_error("%s: the checkpoint holds %s, not a state_dict (a dict of tensors)", file,
                 torch_value_kind_name(top));
        return NULL;
    }
    for (int depth = 0; depth < 2; depth++) {
        const value *inner = torch_dict_get(top, "state_dict");
        if (!inner || inner->kind != V_DICT) inner = torch_dict_get(top, "model");
        if (!inner || inner->kind != V_DICT) break;
        top = inner;
    }
    return top;
}

static size_t type_size(const tensor *t) { return mt_dtype_size(t->dtype); }

/* Checks one tensor against its storage: sizes and strides non-negative, every element it
 * views inside the storage, no more elements than the storage holds (an expanded view, stride
 * 0, would multiply a small file into a large copy). */
static int check_tensor(const char *file, const char *name, const tensor *t, size_t *nbytes)
{
    const storage *s = &t->storage->u.st;
    if (t->ndim > MT_ST_MAX_DIMS)
        return entry_error(file, name, "%zu dimensions, mtlab reads at most %d", t->ndim,
                           MT_ST_MAX_DIMS);
    if (t->n_strides != t->ndim)
        return entry_error(file, name, "%zu sizes but %zu strides", t->ndim, t->n_strides);
    const size_t esize = type_size(t), have = s->nbytes / esize;
    char sizes[160], strides[160];
    mt_st_shape_text(sizes, sizeof sizes, (int)t->ndim, t->size);
    mt_st_shape_text(strides, sizeof strides, (int)t->ndim, t->stride);
    if (t->offset < 0)
        return entry_error(file, name, "storage offset %" PRId64 " is negative", t->offset);
    size_t numel = 1, last = (size_t)t->offset;
    int overflow = (uint64_t)t->offset > SIZE_MAX;
    for (size_t d = 0; d < t->ndim; d++) {
        if (t->size[d] < 0 || t->stride[d] < 0)
            return entry_error(file, name, "sizes %s with strides %s: negative", sizes, strides);
        overflow |= __builtin_mul_overflow(numel, (size_t)t->size[d], &numel);
    }
    if (!overflow && numel) {
        for (size_t d = 0; d < t->ndim; d++) {
            size_t reach;
            overflow |=
                __builtin_mul_overflow((size_t)t->size[d] - 1, (size_t)t->stride[d], &reach) ||
                __builtin_add_overflow(last, reach, &last);
        }
    }
    if (overflow || (numel ? last >= have : last > have))
        return entry_error(file, name,
                           "sizes %s with strides %s from offset %" PRId64
                           " reach past the end of storage '%s', "
                           "which holds %zu %s elements",
                           sizes, strides, t->offset, s->key, have, mt_dtype_torch_name(t->dtype));
    if (numel > have)
        return entry_error(
            file, name,
            "sizes %s with strides %s view %zu elements of storage '%s', which holds %zu: an "
            "expanded view, which mtlab does not load",
            sizes, strides, numel, s->key, have);
    *nbytes = numel * esize;
    return 0;
}

/* Copies the elements t views, in row-major order, to out. */
static void copy_strided(unsigned char *out, const unsigned char *storage_bytes, const tensor *t,
                         size_t numel)
{
    const size_t esize = type_size(t);
    const unsigned char *base = storage_bytes + (size_t)t->offset * esize;
    int contiguous = 1;
    int64_t expect = 1;
    for (size_t d = t->ndim; d-- > 0;) {
        if (t->size[d] != 1 && t->stride[d] != expect) contiguous = 0;
        expect *= t->size[d];
    }
    if (contiguous) {
        memcpy(out, base, numel * esize);
        return;
    }
    int64_t idx[MT_ST_MAX_DIMS] = {0};
    size_t at = 0; /* element offset of idx within the storage, from base */
    for (size_t i = 0; i < numel; i++) {
        memcpy(out + i * esize, base + at * esize, esize);
        for (size_t d = t->ndim; d-- > 0;) {
            if (++idx[d] < t->size[d]) {
                at += (size_t)t->stride[d];
                break;
            }
            at -= (size_t)(t->size[d] - 1) * (size_t)t->stride[d];
            idx[d] = 0;
        }
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

/* As the safetensors writer lays data out: larger elements first, then by name. */
static int by_layout(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    size_t sx = type_size(x->t), sy = type_size(y->t);
    if (sx != sy) return sx > sy ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Tensors grouped by the storage entry they view: by key, not by storage object (a pickle may
 * name one key in several persistent ids), and by size within a key, so that a key given two
 * sizes is checked twice and fails once. */
static int by_storage(const void *a, const void *b)
{
    const storage *x = &(*(const entry *const *)a)->t->storage->u.st,
                  *y = &(*(const entry *const *)b)->t->storage->u.st;
    int c = strcmp(x->key, y->key);
    if (c) return c;
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

static int same_storage(const entry *a, const entry *b)
{
    const storage *x = &a->t->storage->u.st, *y = &b->t->storage->u.st;
    return strcmp(x->key, y->key) == 0 && x->nbytes == y->nbytes;
}

/* The entries of the state_dict, checked, sorted by name; NULL on a problem. */
static entry *collect_entries(const char *file, const value *sd, size_t *n_out)
{
    size_t n = sd->u.seq.n / 2;
    entry *e = mt_xcalloc(n + 1, sizeof *e);
    char quoted[160];
    for (size_t i = 0; i < n; i++) {
        const value *k = sd->u.seq.items[2 * i], *v = sd->u.seq.items[2 * i + 1];
        if (k->kind != V_STR) {
            mt_error("%s: the state_dict has a key that is %s, not a str", file,
                     torch_value_kind_name(k));
            goto fail;
        }
        if (strlen(k->u.str.s) != k->u.str.len) {
            mt_error("%s: key '%s': holds a NUL byte", file,
                     printable_text(quoted, sizeof quoted, k->u.str.s));
            goto fail;
        }
        if (strcmp(k->u.str.s, "__metadata__") == 0) {
            mt_error("%s: key '__metadata__' is reserved and cannot name a tensor", file);
            goto fail;
        }
        if (v->kind != V_TENSOR) {
            mt_error("%s: key '%s' holds %s, not a tensor", file,
                     printable_text(quoted, sizeof quoted, k->u.str.s), torch_value_kind_name(v));
            goto fail;
        }
        e[i].name = k->u.str.s;
        e[i].t = v->u.t;
        if (check_tensor(file, e[i].name, e[i].t, &e[i].nbytes)) goto fail;
    }
    qsort(e, n, sizeof *e, by_name);
    for (size_t i = 1; i < n; i++) {
        if (strcmp(e[i - 1].name, e[i].name) == 0) {
            mt_error("%s: key '%s' appears twice in the state_dict", file,
                     printable_text(quoted, sizeof quoted, e[i].name));
            goto fail;
        }
    }
    *n_out = n;
    return e;
fail:
    free(e);
    return NULL;
}

/* Every storage a tensor views exists with the size data.pkl gives it (asked before anything
 * is allocated for the tensors), and the tensors copy at most MAX_COPIES times their bytes. */
static int check_storages(const char *file, entry *e, size_t n, const torch_storages *from,
                          size_t *total)
{
    size_t storages = 0, copies = 0;
    int rc = 0;
    const entry **order = mt_xmalloc((n + 1) * sizeof *order);
    for (size_t i = 0; i < n; i++) order[i] = &e[i];
    qsort(order, n, sizeof *order, by_storage);
    for (size_t i = 0; i < n && !rc; i++) {
        const storage *s = &order[i]->t->storage->u.st;
        if (i == 0 || !same_storage(order[i], order[i - 1])) {
            if (from->check(from->ctx, s->key, s->nbytes))
                rc = entry_error(file, order[i]->name, "%s", mt_last_error());
            else if (__builtin_add_overflow(storages, s->nbytes, &storages))
                rc = mt_error("%s: the storages hold more bytes than memory can address", file);
        }
        if (!rc && __builtin_add_overflow(copies, order[i]->nbytes, &copies))
            rc = mt_error("%s: the tensors hold more bytes than memory can address", file);
    }
    free(order);
    if (rc) return -1;
    if (copies / MAX_COPIES > storages)
        return mt_error("%s: the tensors copy %zu bytes out of %zu bytes of storages, more than %d "
                        "times: refused "
                        "(views of the same storage named over and over)",
                        file, copies, storages, MAX_COPIES);
    *total = copies;
    return 0;
}

/* u64 length | JSON header padded with spaces to a multiple of 8, offsets assigned to e. */
static char *image_header(const char *file, entry *e, size_t n, size_t *len)
{
    qsort(e, n, sizeof *e, by_layout);
    json_t *root = json_object();
    json_object_set_new(root, "__metadata__", json_pack("{s:s}", "format", "pt"));
    size_t offset = 0;
    char quoted[160];
    for (size_t i = 0; i < n; i++) {
        e[i].offset = offset;
        offset += e[i].nbytes;
        json_t *shape = json_array();
        for (size_t d = 0; d < e[i].t->ndim; d++)
            json_array_append_new(shape, json_integer(e[i].t->size[d]));
        json_t *entry_json =
            json_pack("{s:s, s:o, s:[I, I]}", "dtype", mt_dtype_name(e[i].t->dtype), "shape", shape,
                      "data_offsets", (json_int_t)e[i].offset, (json_int_t)offset);
        if (!entry_json || json_object_set_new(root, e[i].name, entry_json)) {
            json_decref(root);
            mt_error("%s: key '%s' is not valid UTF-8", file,
                     printable_text(quoted, sizeof quoted, e[i].name));
            return NULL;
        }
    }
    return st_header_encode(root, file, len);
}

/* Loads each storage once, copies every tensor viewing it, frees it. */
static int fill_data(const char *file, entry *e, size_t n, unsigned char *data,
                     const torch_storages *from)
{
    const entry **order = mt_xmalloc((n + 1) * sizeof *order);
    for (size_t i = 0; i < n; i++) order[i] = &e[i];
    qsort(order, n, sizeof *order, by_storage);
    unsigned char *bytes = NULL;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const entry *x = order[i];
        const storage *s = &x->t->storage->u.st;
        if (i == 0 || !same_storage(x, order[i - 1])) {
            free(bytes);
            bytes = NULL;
            if (from->load(from->ctx, s->key, s->nbytes, &bytes))
                rc = entry_error(file, x->name, "%s", mt_last_error());
        }
        if (!rc && x->nbytes)
            copy_strided(data + x->offset, bytes, x->t, x->nbytes / type_size(x->t));
    }
    free(bytes);
    free(order);
    return rc;
}

static mt_safetensors *build_image(const char *file, const value *sd, const torch_storages *from)
{
    size_t n = 0, total = 0, header_len = 0;
    entry *e = collect_entries(file, sd, &n);
    if (!e) return NULL;
    char *header = NULL;
    unsigned char *image = NULL;
    if (check_storages(file, e, n, from, &total) ||
        !(header = image_header(file, e, n, &header_len)))
        goto fail;
    if (total > SIZE_MAX - header_len || !(image = malloc(header_len + total))) {
        mt_error("%s: out of memory for %zu bytes of tensors", file, total);
        goto fail;
    }
    memcpy(image, header, header_len);
    if (fill_data(file, e, n, image + header_len, from)) goto fail;
    free(header);
    free(e);
    return st_open_image(image, header_len + total, file);
fail:
    free(image);
    free(header);
    free(e);
    return NULL;
}

mt_safetensors *torch_state_dict_image(const char *file, const value *top,
                                       const torch_storages *from)
{
    const value *sd = find_state_dict(file, top);
    return sd ? build_image(file, sd, from) : NULL;
}

mt_safetensors *torch_pickle_state_dict(const torch_pickle *tp, const torch_storages *storages)
{
    return torch_state_dict_image(torch_pickle_file(tp), torch_pickle_top(tp), storages);
}

mt_safetensors *torch_read_state_dict(const unsigned char *pkl, size_t len, const char *file,
                                      const torch_storages *storages)
{
    torch_pickle *tp = torch_unpickle(pkl, len, file, 0, NULL);
    mt_safetensors *st = tp ? torch_pickle_state_dict(tp, storages) : NULL;
    torch_pickle_free(tp);
    return st;
}
