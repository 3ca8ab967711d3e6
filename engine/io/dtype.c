/* Element types and shapes as names and text: the vocabulary the safetensors reader, the
 * tensor accessors and the writer all use in their checks and messages. */
#include "mtlab/safetensors.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
    int is_float;
    const char *torch; /* the name in a config.json's "dtype" (torch's) */
} DTYPES[MT_DT_COUNT] = {
    [MT_DT_F64] = {"F64", 8, 1, "float64"}, [MT_DT_F32] = {"F32", 4, 1, "float32"},
    [MT_DT_F16] = {"F16", 2, 1, "float16"}, [MT_DT_BF16] = {"BF16", 2, 1, "bfloat16"},
    [MT_DT_I64] = {"I64", 8, 0, "int64"},   [MT_DT_I32] = {"I32", 4, 0, "int32"},
    [MT_DT_I16] = {"I16", 2, 0, "int16"},   [MT_DT_I8] = {"I8", 1, 0, "int8"},
    [MT_DT_U8] = {"U8", 1, 0, "uint8"},     [MT_DT_BOOL] = {"BOOL", 1, 0, "bool"},
};

const char *mt_dtype_name(mt_dtype dt)
{
    return (unsigned)dt < MT_DT_COUNT ? DTYPES[dt].name : "?";
}

const char *mt_dtype_torch_name(mt_dtype dt)
{
    return (unsigned)dt < MT_DT_COUNT ? DTYPES[dt].torch : "?";
}

int mt_dtype_from_torch_name(const char *name, mt_dtype *out)
{
    const char *bare = strncmp(name, "torch.", 6) ? name : name + 6;
    for (int i = 0; i < MT_DT_COUNT; i++) {
        if (strcmp(bare, DTYPES[i].torch) == 0) {
            *out = (mt_dtype)i;
            return 0;
        }
    }
    return -1;
}

size_t mt_dtype_size(mt_dtype dt) { return (unsigned)dt < MT_DT_COUNT ? DTYPES[dt].size : 0; }

int mt_dtype_is_float(mt_dtype dt) { return (unsigned)dt < MT_DT_COUNT && DTYPES[dt].is_float; }

int mt_dtype_from_name(const char *name, mt_dtype *out)
{
    for (int i = 0; i < MT_DT_COUNT; i++) {
        if (strcmp(name, DTYPES[i].name) == 0) {
            *out = (mt_dtype)i;
            return 0;
        }
    }
    return -1;
}

char *mt_st_shape_text(char *buf, size_t len, int ndim, const int64_t *shape)
{
    size_t used = (size_t)snprintf(buf, len, "(");
    for (int d = 0; d < ndim && used < len; d++)
        used +=
            (size_t)snprintf(buf + used, len - used, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (used < len) snprintf(buf + used, len - used, ")");
    return buf;
}
