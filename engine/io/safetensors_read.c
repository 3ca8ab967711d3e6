/* safetensors reader: map a file (or take a buffer), then validate the whole header before any
 * tensor is handed out. Both entry points share st_validate, so the fuzzer exercises exactly
 * the checks real files go through. */
#include "mtlab/safetensors.h"

#include "io/json_util.h"
#include "io/safetensors_image.h"
#include "mtlab/error.h"
#include "mtlab/files.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader copies it as is"
#endif

struct mt_safetensors {
    char *name;
    const unsigned char *file; /* (file_size) the whole file */
    size_t file_size;
    void *map; /* the mapping when opened from a path, else NULL */
    void *owned; /* the image when built in memory (st_open_image), else NULL */
    size_t data_size; /* bytes after the header */
    mt_st_tensor *tensors; /* (n_tensors) sorted by name */
    int n_tensors;
    const char **meta_keys; /* (n_meta) sorted by key */
    const char **meta_values; /* (n_meta) */
    int n_meta;
    char *strings; /* one block holding every name, key and value above */
};

static const char METADATA_KEY[] = "__metadata__";

static int tensor_error(const mt_safetensors *st, const char *tensor, const char *fmt, ...)
    MT_PRINTF(3, 4);
static int tensor_error(const mt_safetensors *st, const char *tensor, const char *fmt, ...)
{
    char what[512], quoted[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return mt_error("%s: tensor '%s': %s", st->name, printable_text(quoted, sizeof quoted, tensor),
                    what);
}

static uint64_t read_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* ---------------------------------------------------------------- one header entry */

static int parse_dtype(const mt_safetensors *st, const char *name, const json_t *entry,
                       mt_dtype *dt)
{
    const json_t *v = json_object_get(entry, "dtype");
    if (!v) return tensor_error(st, name, "missing 'dtype'");
    if (!json_is_string(v))
        return tensor_error(st, name, "dtype is %s, expected a string", json_kind(v));
    if (mt_dtype_from_name(json_string_value(v), dt)) {
        char shown[64];
        return tensor_error(
            st, name,
            "unknown dtype '%s' (mtlab reads F64, F32, F16, BF16, I64, I32, I16, I8, "
            "U8, BOOL)",
            printable_text(shown, sizeof shown, json_string_value(v)));
    }
    return 0;
}

static int parse_shape(const mt_safetensors *st, const char *name, const json_t *entry,
                       mt_st_tensor *t)
{
    const json_t *v = json_object_get(entry, "shape");
    if (!v) return tensor_error(st, name, "missing 'shape'");
    if (!json_is_array(v))
        return tensor_error(st, name, "shape is %s, expected a list of dimensions", json_kind(v));
    size_t ndim = json_array_size(v);
    if (ndim > MT_ST_MAX_DIMS)
        return tensor_error(st, name, "shape has %zu dimensions, at most %d are supported", ndim,
                            MT_ST_MAX_DIMS);
    t->ndim = (int)ndim;
    for (size_t d = 0; d < ndim; d++) {
        const json_t *dim = json_array_get(v, d);
        if (!json_is_integer(dim)) {
            char shown[64];
            return tensor_error(st, name, "shape dimension %zu is %s (%s), expected an integer", d,
                                json_kind(dim), json_snippet(shown, sizeof shown, dim));
        }
        json_int_t n = json_integer_value(dim);
        if (n < 0)
            return tensor_error(st, name, "shape dimension %zu is negative (%lld)", d,
                                (long long)n);
        t->shape[d] = (int64_t)n;
    }
    return 0;
}

static int parse_offsets(const mt_safetensors *st, const char *name, const json_t *entry,
                         uint64_t *begin, uint64_t *end)
{
    const json_t *v = json_object_get(entry, "data_offsets");
    if (!v) return tensor_error(st, name, "missing 'data_offsets'");
    const json_t *b = json_array_get(v, 0), *e = json_array_get(v, 1);
    if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_integer(b) ||
        !json_is_integer(e) || json_integer_value(b) < 0 || json_integer_value(e) < 0) {
        char shown[64];
        return tensor_error(st, name,
                            "data_offsets must be two non-negative integers [begin, end], got %s",
                            json_snippet(shown, sizeof shown, v));
    }
    *begin = (uint64_t)json_integer_value(b);
    *end = (uint64_t)json_integer_value(e);
    if (*begin > *end)
        return tensor_error(st, name, "data_offsets [%llu, %llu] are reversed (begin after end)",
                            (unsigned long long)*begin, (unsigned long long)*end);
    if (*end > st->data_size)
        return tensor_error(
            st, name, "data_offsets [%llu, %llu] run past the end of the data section (%zu bytes)",
            (unsigned long long)*begin, (unsigned long long)*end, st->data_size);
    return 0;
}

/* numel = prod(shape) and nbytes = numel * dtype size, both checked for overflow, must equal the
 * byte range: a mismatch means the header and the data disagree about what is stored. */
static int parse_tensor(const mt_safetensors *st, const char *name, const json_t *entry,
                        mt_st_tensor *t)
{
    if (!json_is_object(entry))
        return tensor_error(st, name, "entry is %s, expected an object", json_kind(entry));
    uint64_t begin = 0, end = 0;
    if (parse_dtype(st, name, entry, &t->dtype) || parse_shape(st, name, entry, t) ||
        parse_offsets(st, name, entry, &begin, &end))
        return -1;
    char shape[160];
    mt_st_shape_text(shape, sizeof shape, t->ndim, t->shape);
    size_t numel = 1, nbytes;
    for (int d = 0; d < t->ndim; d++)
        if (__builtin_mul_overflow(numel, (size_t)t->shape[d], &numel))
            return tensor_error(st, name, "shape %s has too many elements", shape);
    if (__builtin_mul_overflow(numel, mt_dtype_size(t->dtype), &nbytes))
        return tensor_error(st, name, "shape %s has too many elements", shape);
    if (nbytes != end - begin)
        return tensor_error(st, name,
                            "shape %s of %s is %zu bytes but data_offsets [%llu, %llu] hold %llu",
                            shape, mt_dtype_name(t->dtype), nbytes, (unsigned long long)begin,
                            (unsigned long long)end, (unsigned long long)(end - begin));
    t->numel = numel;
    t->nbytes = nbytes;
    t->offset = (size_t)begin;
    t->data = st->file + (st->file_size - st->data_size) + begin;
    return 0;
}

static int check_metadata(const mt_safetensors *st, const json_t *meta)
{
    if (!json_is_object(meta))
        return mt_error("%s: %s is %s, expected an object of strings", st->name, METADATA_KEY,
                        json_kind(meta));
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)meta, key, value)
    {
        if (!json_is_string(value)) {
            char shown[160];
            return mt_error("%s: %s entry '%s' is %s, expected a string", st->name, METADATA_KEY,
                            printable_text(shown, sizeof shown, key), json_kind(value));
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- the whole header */

static int by_name(const void *a, const void *b)
{
    return strcmp(((const mt_st_tensor *)a)->name, ((const mt_st_tensor *)b)->name);
}

static int by_offset(const void *a, const void *b)
{
    const mt_st_tensor *x = *(const mt_st_tensor *const *)a, *y = *(const mt_st_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Walking the tensors by offset, each non-empty range must start at or after the furthest end
 * seen so far (empty tensors occupy nothing and cannot overlap). */
static int check_overlaps(const mt_safetensors *st)
{
    if (st->n_tensors < 2) return 0;
    const mt_st_tensor **order = malloc((size_t)st->n_tensors * sizeof *order);
    if (!order) return mt_error("%s: out of memory for %d tensors", st->name, st->n_tensors);
    for (int i = 0; i < st->n_tensors; i++) order[i] = &st->tensors[i];
    qsort(order, (size_t)st->n_tensors, sizeof *order, by_offset);
    const mt_st_tensor *furthest = NULL;
    int rc = 0;
    for (int i = 0; i < st->n_tensors && !rc; i++) {
        const mt_st_tensor *t = order[i];
        if (t->nbytes == 0) continue;
        if (furthest && t->offset < furthest->offset + furthest->nbytes) {
            char a[160], b[160];
            rc = mt_error(
                "%s: tensors '%s' (data_offsets [%zu, %zu]) and '%s' (data_offsets [%zu, %zu]) "
                "overlap",
                st->name, printable_text(a, sizeof a, furthest->name), furthest->offset,
                furthest->offset + furthest->nbytes, printable_text(b, sizeof b, t->name),
                t->offset, t->offset + t->nbytes);
        }
        if (!furthest || t->offset + t->nbytes > furthest->offset + furthest->nbytes) furthest = t;
    }
    free(order);
    return rc;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Copies the metadata map into st (keys sorted, values alongside). */
static int take_metadata(mt_safetensors *st, const json_t *meta, char **cursor)
{
    size_t n = json_object_size(meta);
    if (n == 0) return 0;
    const char **pairs = malloc(2 * n * sizeof *pairs);
    if (!pairs) return mt_error("%s: out of memory for %zu metadata entries", st->name, n);
    size_t i = 0;
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)meta, key, value)
    {
        char *k = *cursor;
        *cursor = stpcpy(k, key) + 1;
        char *v = *cursor;
        *cursor = stpcpy(v, json_string_value(value)) + 1;
        pairs[2 * i] = k;
        pairs[2 * i + 1] = v;
        i++;
    }
    /* sort (key, value) pairs as units by their key */
    qsort(pairs, n, 2 * sizeof *pairs, by_key);
    st->meta_keys = malloc(n * sizeof *st->meta_keys);
    st->meta_values = malloc(n * sizeof *st->meta_values);
    if (!st->meta_keys || !st->meta_values) {
        free(pairs);
        return mt_error("%s: out of memory for %zu metadata entries", st->name, n);
    }
    for (i = 0; i < n; i++) {
        st->meta_keys[i] = pairs[2 * i];
        st->meta_values[i] = pairs[2 * i + 1];
    }
    st->n_meta = (int)n;
    free(pairs);
    return 0;
}

/* Bytes for every tensor name and metadata key/value, NUL-terminated. */
static size_t strings_size(const json_t *header)
{
    size_t total = 0;
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)header, key, value)
    {
        total += strlen(key) + 1;
        if (strcmp(key, METADATA_KEY) != 0) continue;
        const char *mk;
        const json_t *mv;
        json_object_foreach((json_t *)value, mk, mv) total +=
            strlen(mk) + 1 + strlen(json_string_value(mv)) + 1;
    }
    return total;
}

static int parse_header(mt_safetensors *st, const json_t *header)
{
    const json_t *meta = json_object_get(header, METADATA_KEY);
    if (meta && check_metadata(st, meta)) return -1;
    size_t n = json_object_size(header) - (meta ? 1 : 0);
    if (n > (size_t)MT_ST_MAX_HEADER) return mt_error("%s: too many tensors (%zu)", st->name, n);
    st->strings = malloc(strings_size(header) + 1);
    st->tensors = calloc(n ? n : 1, sizeof *st->tensors);
    if (!st->strings || !st->tensors)
        return mt_error("%s: out of memory for %zu tensors", st->name, n);
    char *cursor = st->strings;
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)header, key, value)
    {
        if (strcmp(key, METADATA_KEY) == 0) continue;
        mt_st_tensor *t = &st->tensors[st->n_tensors];
        if (parse_tensor(st, key, value, t)) return -1;
        t->name = cursor;
        cursor = stpcpy(cursor, key) + 1;
        st->n_tensors++;
    }
    qsort(st->tensors, n, sizeof *st->tensors, by_name);
    if (check_overlaps(st)) return -1;
    return meta ? take_metadata(st, meta, &cursor) : 0;
}

/* Everything known about the layout is checked here, for both the mapped and the buffer path. */
static int st_validate(mt_safetensors *st)
{
    if (st->file_size < 8)
        return mt_error(
            "%s: file is %zu bytes, too short for a safetensors file (the header length "
            "alone is 8)",
            st->name, st->file_size);
    uint64_t header_len = read_le64(st->file);
    if (header_len > MT_ST_MAX_HEADER)
        return mt_error("%s: header length %llu is absurdly large (the limit is %d bytes); not a "
                        "safetensors file?",
                        st->name, (unsigned long long)header_len, MT_ST_MAX_HEADER);
    if (header_len > st->file_size - 8)
        return mt_error("%s: header length %llu runs past the end of the file (%zu bytes)",
                        st->name, (unsigned long long)header_len, st->file_size);
    st->data_size = st->file_size - 8 - (size_t)header_len;
    json_error_t jerr;
    json_t *header = json_loadb((const char *)st->file + 8, (size_t)header_len,
                                JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!header) {
        return mt_error("%s: header is not valid JSON: %s (header byte %d)", st->name,
                        mt_error_oneline(jerr.text), jerr.position);
    }
    int rc = json_is_object(header) ? parse_header(st, header)
                                    : mt_error("%s: header is %s, expected a JSON object", st->name,
                                               json_kind(header));
    json_decref(header);
    return rc;
}

/* ---------------------------------------------------------------- open and close */

static mt_safetensors *st_new(const char *name)
{
    mt_safetensors *st = mt_xcalloc(1, sizeof *st);
    st->name = mt_xstrdup(name);
    return st;
}

mt_safetensors *mt_st_open_buffer(const void *data, size_t len, const char *name)
{
    mt_safetensors *st = st_new(name ? name : "<buffer>");
    st->file = data;
    st->file_size = len;
    if (st_validate(st)) {
        mt_st_close(st);
        return NULL;
    }
    return st;
}

mt_safetensors *st_open_image(void *data, size_t len, const char *name)
{
    mt_safetensors *st = st_new(name ? name : "<buffer>");
    st->owned = data;
    st->file = data;
    st->file_size = len;
    if (st_validate(st)) {
        mt_st_close(st);
        return NULL;
    }
    return st;
}

mt_safetensors *mt_st_open(const char *path)
{
    void *map;
    size_t size;
    if (mt_file_map(path, &map, &size)) return NULL;
    mt_safetensors *st = st_new(path);
    st->map = map;
    st->file = map;
    st->file_size = size;
    if (st_validate(st)) {
        mt_st_close(st);
        return NULL;
    }
    return st;
}

void mt_st_close(mt_safetensors *st)
{
    if (!st) return;
    if (st->map) munmap(st->map, st->file_size);
    free(st->owned);
    free(st->tensors);
    free(st->meta_keys);
    free(st->meta_values);
    free(st->strings);
    free(st->name);
    free(st);
}

/* ---------------------------------------------------------------- look-ups */

const char *mt_st_name(const mt_safetensors *st) { return st->name; }

size_t mt_st_file_size(const mt_safetensors *st) { return st->file_size; }

int mt_st_count(const mt_safetensors *st) { return st->n_tensors; }

const mt_st_tensor *mt_st_tensor_at(const mt_safetensors *st, int i)
{
    return i >= 0 && i < st->n_tensors ? &st->tensors[i] : NULL;
}

const mt_st_tensor *mt_st_find(const mt_safetensors *st, const char *name)
{
    mt_st_tensor key = {.name = name};
    return st->n_tensors ? bsearch(&key, st->tensors, (size_t)st->n_tensors, sizeof key, by_name)
                         : NULL;
}

int mt_st_metadata_count(const mt_safetensors *st) { return st->n_meta; }

const char *mt_st_metadata_key(const mt_safetensors *st, int i)
{
    return i >= 0 && i < st->n_meta ? st->meta_keys[i] : NULL;
}

const char *mt_st_metadata_value(const mt_safetensors *st, int i)
{
    return i >= 0 && i < st->n_meta ? st->meta_values[i] : NULL;
}

const char *mt_st_metadata_get(const mt_safetensors *st, const char *key)
{
    if (!st->n_meta) return NULL;
    const char **found = bsearch(&key, st->meta_keys, (size_t)st->n_meta, sizeof key, by_key);
    return found ? st->meta_values[found - st->meta_keys] : NULL;
}
