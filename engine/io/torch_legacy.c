/* The legacy checkpoint format (torch.save before torch 1.6, or with
 * _use_new_zipfile_serialization=False): one file of pickles in a row, then the storages.
 *   pickle 1  the magic number 0x1950a86a20f9469cfc6c (compared byte for byte)
 *   pickle 2  the format version, 1001
 *   pickle 3  {"protocol_version": 1001, "little_endian": True, "type_sizes": {...}}
 *   pickle 4  the state_dict, through the same restricted unpickler as data.pkl
 *   pickle 5  the storage keys, in the order their data follows
 *   then for each key: the element count (8 bytes, little-endian) and count x element size
 *   bytes, the element size being that of the storage type pickle 4 gives the key. */
#include "io/json_util.h"
#include "io/torch_pickle.h"
#include "mtlab/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2), as every legacy torch.save wrote it */
static const unsigned char MAGIC[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                      0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e};

enum { LEGACY_VERSION = 1001 };

typedef struct {
    const char *key;
    size_t offset, nbytes; /* of its data in the file */
} legacy_storage;

typedef struct {
    const unsigned char *data;
    legacy_storage *storages; /* (n) sorted by key once laid out */
    size_t n;
} legacy_file;

int torch_legacy_magic(const unsigned char *data, size_t len)
{
    return len >= sizeof MAGIC && memcmp(data, MAGIC, sizeof MAGIC) == 0;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const legacy_storage *)a)->key, ((const legacy_storage *)b)->key);
}

static const legacy_storage *find(const legacy_file *lf, const char *key)
{
    legacy_storage want = {.key = key};
    return lf->n ? bsearch(&want, lf->storages, lf->n, sizeof want, by_key) : NULL;
}

static int legacy_check(void *ctx, const char *key, size_t nbytes)
{
    char quoted[160];
    const legacy_storage *s = find(ctx, key);
    if (!s)
        return mt_error("storage '%s': not in the list of storages the file holds",
                        printable_text(quoted, sizeof quoted, key));
    if (s->nbytes != nbytes)
        return mt_error("storage '%s': the file holds %zu bytes of it, the state_dict gives it %zu",
                        printable_text(quoted, sizeof quoted, key), s->nbytes, nbytes);
    return 0;
}

static int legacy_load(void *ctx, const char *key, size_t nbytes, unsigned char **data)
{
    if (legacy_check(ctx, key, nbytes)) return -1;
    const legacy_file *lf = ctx;
    const legacy_storage *s = find(lf, key);
    *data = malloc(nbytes ? nbytes : 1);
    if (!*data) return mt_error("storage '%s': out of memory for %zu bytes", key, nbytes);
    if (nbytes) memcpy(*data, lf->data + s->offset, nbytes);
    return 0;
}

/* Lays out the storages after the key list (pickle 5) at pos; 0 or -1. */
static int lay_out(const char *file, const unsigned char *data, size_t len, size_t pos,
                   const torch_pickle *keys, torch_pickle *sd, legacy_file *lf)
{
    const char *key = NULL;
    size_t n = torch_pickle_strings(keys, 0, &key);
    lf->storages = mt_xcalloc(n + 1, sizeof *lf->storages);
    char quoted[160];
    for (size_t i = 0; i < n; i++) {
        torch_pickle_strings(keys, i, &key);
        if (!key)
            return mt_error("%s: the storage list holds something other than a str at %zu", file,
                            i);
        size_t esize = torch_pickle_storage_elem_size(sd, key);
        if (!esize)
            return mt_error(
                "%s: storage '%s' is listed but the state_dict pickle names no such storage", file,
                printable_text(quoted, sizeof quoted, key));
        if (len - pos < 8)
            return mt_error("%s: the file ends at byte %zu, before storage '%s' (truncated?)", file,
                            len, printable_text(quoted, sizeof quoted, key));
        uint64_t count = 0;
        for (int b = 7; b >= 0; b--) count = count << 8 | data[pos + (size_t)b];
        pos += 8;
        uint64_t nbytes;
        if (__builtin_mul_overflow(count, (uint64_t)esize, &nbytes) || nbytes > len - pos)
            return mt_error(
                "%s: storage '%s' of %llu elements runs past the end of the file (%zu bytes left)",
                file, printable_text(quoted, sizeof quoted, key), (unsigned long long)count,
                len - pos);
        lf->storages[i] = (legacy_storage){key, pos, (size_t)nbytes};
        lf->n = i + 1;
        pos += (size_t)nbytes;
    }
    qsort(lf->storages, lf->n, sizeof *lf->storages, by_key);
    for (size_t i = 1; i < lf->n; i++)
        if (strcmp(lf->storages[i - 1].key, lf->storages[i].key) == 0)
            return mt_error("%s: storage '%s' is listed twice", file,
                            printable_text(quoted, sizeof quoted, lf->storages[i].key));
    return 0;
}

mt_safetensors *torch_legacy_read(const unsigned char *data, size_t len, const char *file)
{
    if (!torch_legacy_magic(data, len)) {
        mt_error("%s: not a legacy PyTorch checkpoint (no magic number)", file);
        return NULL;
    }
    torch_pickle *version = NULL, *sys = NULL, *sd = NULL, *keys = NULL;
    mt_safetensors *st = NULL;
    legacy_file lf = {.data = data};
    size_t pos = sizeof MAGIC, used;
    int64_t v = 0;
    if (!(version = torch_unpickle(data + pos, len - pos, file, pos, &used))) goto out;
    if (torch_pickle_int(version, &v) || v != LEGACY_VERSION) {
        mt_error("%s: legacy format version %lld, mtlab reads %d", file, (long long)v,
                 LEGACY_VERSION);
        goto out;
    }
    pos += used;
    if (!(sys = torch_unpickle(data + pos, len - pos, file, pos, &used))) goto out;
    if (!torch_pickle_flag(sys, "little_endian")) {
        mt_error("%s: a big-endian legacy checkpoint (mtlab reads little-endian checkpoints only)",
                 file);
        goto out;
    }
    pos += used;
    if (!(sd = torch_unpickle(data + pos, len - pos, file, pos, &used))) goto out;
    pos += used;
    if (!(keys = torch_unpickle(data + pos, len - pos, file, pos, &used))) goto out;
    pos += used;
    if (lay_out(file, data, len, pos, keys, sd, &lf)) goto out;
    torch_storages storages = {legacy_check, legacy_load, &lf};
    st = torch_pickle_state_dict(sd, &storages);
out:
    free(lf.storages);
    torch_pickle_free(version);
    torch_pickle_free(sys);
    torch_pickle_free(sd);
    torch_pickle_free(keys);
    return st;
}
