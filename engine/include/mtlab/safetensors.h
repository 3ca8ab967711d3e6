/* safetensors files (the Hugging Face weight format): a reader that validates everything
 * before handing out a byte, and an atomic writer whose output the `safetensors` library loads.
 *
 * File layout:
 *   u64 little-endian N | N bytes of JSON header | data section
 *   header = {"__metadata__": {"k": "v", ...},          (optional, strings only)
 *             "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
 *   offsets are relative to the start of the data section, end exclusive.
 *
 * The reader works on a mapped file or on a caller's memory buffer through the same validation:
 * header length (not past the end, at most MT_ST_MAX_HEADER bytes), JSON syntax, entry types,
 * dtypes, shapes, shape x dtype size == byte range, ranges inside the data section and not
 * overlapping. Any problem is one line in mt_last_error() naming the file, the tensor and the
 * problem, e.g. "m/model.safetensors: tensor 'lm_head.weight': data_offsets [10, 9000] run past
 * the end of the data section (812 bytes)". */
#ifndef MTLAB_SAFETENSORS_H
#define MTLAB_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

/* Element types. Models use F32, F16 and BF16; the others can be read (token ids, masks). */
typedef enum {
    MT_DT_F64,
    MT_DT_F32,
    MT_DT_F16,
    MT_DT_BF16,
    MT_DT_I64,
    MT_DT_I32,
    MT_DT_I16,
    MT_DT_I8,
    MT_DT_U8,
    MT_DT_BOOL,
    MT_DT_COUNT
} mt_dtype;

/* "F32", "BF16", ... as written in headers. */
const char *mt_dtype_name(mt_dtype dt);
/* "float32", "bfloat16", ... as a config.json's "dtype" (torch_dtype) names them. */
const char *mt_dtype_torch_name(mt_dtype dt);
/* The dtype a config.json names ("float16", also "torch.float16"); -1 when none. */
int mt_dtype_from_torch_name(const char *name, mt_dtype *out);
/* Bytes per element. */
size_t mt_dtype_size(mt_dtype dt);
/* The dtype called name; -1 when it is not one of the above. */
int mt_dtype_from_name(const char *name, mt_dtype *out);
/* 1 for F64, F32, F16, BF16 (the dtypes mt_st_read_f32 converts). */
int mt_dtype_is_float(mt_dtype dt);

enum {
    MT_ST_MAX_DIMS = 8,
    MT_ST_MAX_HEADER = 100000000, /* the limit the safetensors library itself enforces */
};

typedef struct {
    const char *name;
    mt_dtype dtype;
    int ndim; /* 0 for a scalar */
    int64_t shape[MT_ST_MAX_DIMS];
    size_t numel; /* product of shape (1 for a scalar) */
    size_t nbytes; /* numel * mt_dtype_size(dtype) */
    size_t offset; /* first byte within the data section */
    /* Little-endian elements, read-only, valid until mt_st_close. Not necessarily aligned to
     * the element size (the format does not promise it): copy with memcpy or mt_st_read_*. */
    const void *data;
} mt_st_tensor;

typedef struct mt_safetensors mt_safetensors;

/* Map and validate a file; NULL (mt_last_error) on any problem. */
mt_safetensors *mt_st_open(const char *path);
/* Validate a file already in memory; data is borrowed and must outlive the handle. name is
 * used in messages ("<buffer>" when NULL). */
mt_safetensors *mt_st_open_buffer(const void *data, size_t len, const char *name);
void mt_st_close(mt_safetensors *st);

/* The path or name given at open. */
const char *mt_st_name(const mt_safetensors *st);
/* Size of the whole file or buffer, in bytes. */
size_t mt_st_file_size(const mt_safetensors *st);

/* Tensors in name order (strcmp), i in [0, mt_st_count). */
int mt_st_count(const mt_safetensors *st);
const mt_st_tensor *mt_st_tensor_at(const mt_safetensors *st, int i);
/* NULL when absent (no error is recorded: absence is often a question, not a problem). */
const mt_st_tensor *mt_st_find(const mt_safetensors *st, const char *name);

/* The "__metadata__" string map, in key order. */
int mt_st_metadata_count(const mt_safetensors *st);
const char *mt_st_metadata_key(const mt_safetensors *st, int i);
const char *mt_st_metadata_value(const mt_safetensors *st, int i);
/* Value for key, or NULL. */
const char *mt_st_metadata_get(const mt_safetensors *st, const char *key);

/* Copy a F32/F16/BF16/F64 tensor into out (numel floats), converting to fp32. */
void mt_st_tensor_to_f32(const mt_st_tensor *t, float *out);

/* Find tensor name, check that its shape is (shape[0], ..., shape[ndim-1]) and that it is a
 * floating-point tensor, and copy it into out as fp32. Errors: "<file>: missing tensor 'x'",
 * "<file>: tensor 'x' has shape (3, 4), expected (4, 4)", "<file>: tensor 'x' is I32, not a
 * floating-point tensor". */
int mt_st_read_f32(const mt_safetensors *st, const char *name, int ndim, const int64_t *shape,
                   float *out);
/* The same for any dtype without conversion: the tensor must be exactly dtype; copies the
 * nbytes raw little-endian bytes into out. */
int mt_st_read_raw(const mt_safetensors *st, const char *name, mt_dtype dtype, int ndim,
                   const int64_t *shape, void *out);

/* "(3, 4)" ("()" for a scalar) into buf; returns buf. */
char *mt_st_shape_text(char *buf, size_t len, int ndim, const int64_t *shape);

/* ---------------------------------------------------------------- writing */
typedef struct {
    const char *name;
    mt_dtype dtype; /* dtype stored in the file */
    int ndim;
    int64_t shape[MT_ST_MAX_DIMS];
    /* Exactly one source (both may be NULL for an empty tensor):
     *   f32  numel fp32 values, stored as F32 or converted to F16/BF16 (round to nearest even)
     *   raw  numel elements of dtype, little-endian, copied unchanged */
    const float *f32;
    const void *raw;
} mt_st_write_tensor;

typedef struct {
    const char *key;
    const char *value;
} mt_st_meta;

/* Write a safetensors file atomically (temporary file in the same directory, flushed and
 * fsync'ed, renamed over path, directory fsync'ed): path holds either its old contents or the
 * complete new file. The header lists the tensors in name order; the data section is laid out
 * as the safetensors library does (larger element sizes first, then by name), so every tensor
 * is aligned to its element size; the header is padded with spaces to a multiple of 8 bytes. */
int mt_st_write(const char *path, const mt_st_write_tensor *tensors, int n_tensors,
                const mt_st_meta *meta, int n_meta);

#endif
