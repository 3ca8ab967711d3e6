/* safetensors writer: the header JSON (names sorted), data laid out as the safetensors library
 * lays it out, fp32 sources converted to F16/BF16 on the way out. */
#include "io/safetensors_write.h"

#include "io/json_util.h"
#include "io/safetensors_image.h"
#include "math/half.h"
#include "mtlab/error.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Elements converted per write call: bounds the scratch buffer, not the tensor size. */
enum { CONVERT_CHUNK = 4096 };

typedef struct {
    const mt_st_write_tensor *t;
    size_t nbytes;
    size_t offset; /* within the data section */
} planned;

static int check_tensor(const char *path, const mt_st_write_tensor *t, size_t *nbytes)
{
    char quoted[160];
    if (!t->name) return mt_error("%s: a tensor has no name", path);
    const char *name = printable_text(quoted, sizeof quoted, t->name);
    if (strcmp(t->name, "__metadata__") == 0)
        return mt_error("%s: '__metadata__' is reserved and cannot name a tensor", path);
    if ((unsigned)t->dtype >= MT_DT_COUNT)
        return mt_error("%s: tensor '%s': invalid dtype %d", path, name, (int)t->dtype);
    if (t->ndim < 0 || t->ndim > MT_ST_MAX_DIMS)
        return mt_error("%s: tensor '%s': %d dimensions (0 to %d supported)", path, name, t->ndim,
                        MT_ST_MAX_DIMS);
    size_t numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0)
            return mt_error("%s: tensor '%s': shape dimension %d is negative (%lld)", path, name, d,
                            (long long)t->shape[d]);
        if (__builtin_mul_overflow(numel, (size_t)t->shape[d], &numel))
            return mt_error("%s: tensor '%s': too many elements", path, name);
    }
    if (__builtin_mul_overflow(numel, mt_dtype_size(t->dtype), nbytes))
        return mt_error("%s: tensor '%s': too many elements", path, name);
    if (t->f32 && t->raw)
        return mt_error("%s: tensor '%s': give f32 or raw data, not both", path, name);
    if (numel && !t->f32 && !t->raw) return mt_error("%s: tensor '%s': no data", path, name);
    if (t->f32 && !mt_dtype_is_float(t->dtype))
        return mt_error("%s: tensor '%s': float32 values cannot be stored as %s", path, name,
                        mt_dtype_name(t->dtype));
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const planned *)a)->t->name, ((const planned *)b)->t->name);
}

/* The safetensors library orders the data by element size (largest first), then name: with
 * the data section 8-aligned, every tensor then starts at a multiple of its element size. */
static int by_layout(const void *a, const void *b)
{
    const planned *x = a, *y = b;
    size_t sx = mt_dtype_size(x->t->dtype), sy = mt_dtype_size(y->t->dtype);
    if (sx != sy) return sx > sy ? -1 : 1;
    return strcmp(x->t->name, y->t->name);
}

static json_t *tensor_entry(const planned *p)
{
    json_t *shape = json_array();
    for (int d = 0; d < p->t->ndim; d++) json_array_append_new(shape, json_integer(p->t->shape[d]));
    return json_pack("{s:s, s:o, s:[I, I]}", "dtype", mt_dtype_name(p->t->dtype), "shape", shape,
                     "data_offsets", (json_int_t)p->offset, (json_int_t)(p->offset + p->nbytes));
}

/* u64 length | compact JSON padded with spaces to a multiple of 8 (as the library pads). */
static char *build_header(const char *path, const planned *plan, int n, const mt_st_meta *meta,
                          int n_meta, size_t *len)
{
    json_t *root = json_object();
    char quoted[160];
    if (n_meta > 0) {
        json_t *m = json_object();
        json_object_set_new(root, "__metadata__", m);
        for (int i = 0; i < n_meta; i++) {
            if (!meta[i].key || !meta[i].value ||
                json_object_set_new(m, meta[i].key, json_string(meta[i].value))) {
                json_decref(root);
                mt_error("%s: metadata entry %d is missing or not valid UTF-8", path, i);
                return NULL;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        json_t *entry = tensor_entry(&plan[i]);
        if (!entry || json_object_set_new(root, plan[i].t->name, entry)) {
            json_decref(root);
            mt_error("%s: tensor name '%s' is not valid UTF-8", path,
                     printable_text(quoted, sizeof quoted, plan[i].t->name));
            return NULL;
        }
    }
    return st_header_encode(root, path, len);
}

char *st_header_encode(json_t *root, const char *name, size_t *len)
{
    char *json = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
    if (!json) {
        mt_error("%s: cannot encode the header", name);
        return NULL;
    }
    size_t json_len = strlen(json), padded = (json_len + 7) / 8 * 8;
    char *header = mt_xmalloc(8 + padded);
    for (int i = 0; i < 8; i++) header[i] = (char)((uint64_t)padded >> (8 * i));
    memcpy(header + 8, json, json_len);
    memset(header + 8 + json_len, ' ', padded - json_len);
    free(json);
    *len = 8 + padded;
    return header;
}

static int write_converted(atomic_file *af, const mt_st_write_tensor *t, size_t numel)
{
    const size_t size = mt_dtype_size(t->dtype);
    unsigned char buf[CONVERT_CHUNK * 8];
    for (size_t start = 0; start < numel; start += CONVERT_CHUNK) {
        size_t count = numel - start < CONVERT_CHUNK ? numel - start : CONVERT_CHUNK;
        const float *x = t->f32 + start;
        for (size_t i = 0; i < count; i++) {
            if (t->dtype == MT_DT_F32) {
                memcpy(buf + 4 * i, &x[i], 4);
            } else if (t->dtype == MT_DT_F64) {
                double v = x[i];
                memcpy(buf + 8 * i, &v, 8);
            } else {
                uint16_t h = t->dtype == MT_DT_F16 ? mt_f32_to_f16(x[i]) : mt_f32_to_bf16(x[i]);
                memcpy(buf + 2 * i, &h, 2);
            }
        }
        if (atomic_file_write(af, buf, count * size)) return -1;
    }
    return 0;
}

int st_write_contents(atomic_file *af, const mt_st_write_tensor *tensors, int n_tensors,
                      const mt_st_meta *meta, int n_meta)
{
    const char *path = af->path;
    if (n_tensors < 0 || n_meta < 0) return mt_error("%s: negative tensor or metadata count", path);
    planned *plan = mt_xcalloc((size_t)n_tensors + 1, sizeof *plan);
    int rc = -1;
    for (int i = 0; i < n_tensors; i++) {
        plan[i].t = &tensors[i];
        if (check_tensor(path, &tensors[i], &plan[i].nbytes)) goto out;
    }
    qsort(plan, (size_t)n_tensors, sizeof *plan, by_name);
    for (int i = 1; i < n_tensors; i++) {
        if (strcmp(plan[i - 1].t->name, plan[i].t->name) == 0) {
            char quoted[160];
            mt_error("%s: tensor '%s' is given twice", path,
                     printable_text(quoted, sizeof quoted, plan[i].t->name));
            goto out;
        }
    }
    qsort(plan, (size_t)n_tensors, sizeof *plan, by_layout);
    size_t offset = 0;
    for (int i = 0; i < n_tensors; i++) {
        plan[i].offset = offset;
        offset += plan[i].nbytes;
    }
    size_t header_len;
    char *header = build_header(path, plan, n_tensors, meta, n_meta, &header_len);
    if (!header) goto out;
    rc = atomic_file_write(af, header, header_len);
    free(header);
    for (int i = 0; i < n_tensors && !rc; i++) {
        const mt_st_write_tensor *t = plan[i].t;
        if (t->raw) rc = atomic_file_write(af, t->raw, plan[i].nbytes);
        else if (t->f32) rc = write_converted(af, t, plan[i].nbytes / mt_dtype_size(t->dtype));
    }
out:
    free(plan);
    return rc;
}

int mt_st_write(const char *path, const mt_st_write_tensor *tensors, int n_tensors,
                const mt_st_meta *meta, int n_meta)
{
    atomic_file af;
    if (atomic_file_begin(&af, path)) return -1;
    if (st_write_contents(&af, tensors, n_tensors, meta, n_meta) || atomic_file_seal(&af)) {
        atomic_file_discard(&af);
        return -1;
    }
    return atomic_file_commit(&af);
}
