/* The archive around a torch.save checkpoint (torch_legacy.c reads the format before it): find
 * ARCHIVE/data.pkl, check the byte order, hand data.pkl to the restricted unpickler
 * (torch_pickle.c) and the ARCHIVE/data/KEY entries to it as storages. libzip reads the archive
 * (and checks each entry's CRC as it is read). */
#include "mtlab/torch_checkpoint.h"

#include "io/json_util.h"
#include "io/torch_pickle.h"
#include "mtlab/error.h"
#include "mtlab/files.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zip.h>

typedef struct {
    const char *file;
    zip_t *za;
    char *prefix; /* "ARCHIVE/" */
} archive;

/* The index of the entry prefix + rest, or -1 with "ENTRY: no such entry" in mt_last_error. */
static zip_int64_t locate(const archive *a, const char *rest, char *path, size_t size)
{
    snprintf(path, size, "%s%s", a->prefix, rest);
    zip_int64_t i = zip_name_locate(a->za, path, ZIP_FL_ENC_RAW);
    if (i < 0) mt_error("no entry %s in the archive", path);
    return i;
}

/* A stored (uncompressed) entry's size: torch.save writes them so; a compressed one is refused,
 * which also keeps a small file from claiming gigabytes. */
static int entry_size(const archive *a, zip_int64_t i, const char *path, size_t *size)
{
    zip_stat_t sb;
    zip_stat_init(&sb);
    if (zip_stat_index(a->za, (zip_uint64_t)i, ZIP_FL_ENC_RAW, &sb) != 0)
        return mt_error("entry %s: %s", path, zip_strerror(a->za));
    if (!(sb.valid & ZIP_STAT_SIZE) || !(sb.valid & ZIP_STAT_COMP_METHOD))
        return mt_error("entry %s: libzip gives no size or compression method", path);
    if (sb.comp_method != ZIP_CM_STORE)
        return mt_error(
            "entry %s is compressed (method %u); torch.save stores entries uncompressed", path,
            (unsigned)sb.comp_method);
    if (sb.size > SIZE_MAX) return mt_error("entry %s is too large", path);
    *size = (size_t)sb.size;
    return 0;
}

/* Reads size bytes of entry i into a new buffer (one byte more, zeroed). */
static int read_entry(const archive *a, zip_int64_t i, const char *path, size_t size,
                      unsigned char **out)
{
    unsigned char *buf = malloc(size + 1);
    if (!buf) return mt_error("entry %s: out of memory for %zu bytes", path, size);
    zip_file_t *zf = zip_fopen_index(a->za, (zip_uint64_t)i, 0);
    if (!zf) {
        free(buf);
        return mt_error("entry %s: %s", path, zip_strerror(a->za));
    }
    size_t got = 0;
    while (got < size) {
        zip_int64_t r = zip_fread(zf, buf + got, size - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    /* reading to the end is what makes libzip compare the CRC */
    char extra;
    zip_int64_t tail = got == size ? zip_fread(zf, &extra, 1) : 0;
    int rc = 0;
    if (got != size || tail != 0)
        rc = mt_error("entry %s: %s", path,
                      tail < 0 || got < size ? zip_file_strerror(zf)
                                             : "longer than its stated size");
    zip_fclose(zf);
    if (rc) {
        free(buf);
        return -1;
    }
    buf[size] = 0;
    *out = buf;
    return 0;
}

/* ---------------------------------------------------------------- storages for the unpickler */

static int storage_entry(const archive *a, const char *key, size_t nbytes, zip_int64_t *i,
                         char *path, size_t size)
{
    char quoted[160];
    char rest[4096];
    snprintf(rest, sizeof rest, "data/%s", key);
    if ((*i = locate(a, rest, path, size)) < 0)
        return mt_error("storage '%s': no entry %s in the archive",
                        printable_text(quoted, sizeof quoted, key),
                        printable_text(rest, sizeof rest, path));
    size_t have;
    if (entry_size(a, *i, path, &have))
        return mt_error_context("storage '%s'", printable_text(quoted, sizeof quoted, key));
    if (have != nbytes)
        return mt_error("storage '%s': entry %s holds %zu bytes, data.pkl gives it %zu",
                        printable_text(quoted, sizeof quoted, key), path, have, nbytes);
    return 0;
}

static int storage_check(void *ctx, const char *key, size_t nbytes)
{
    zip_int64_t i;
    char path[4096];
    return storage_entry(ctx, key, nbytes, &i, path, sizeof path);
}

static int storage_load(void *ctx, const char *key, size_t nbytes, unsigned char **data)
{
    zip_int64_t i;
    char path[4096];
    if (storage_entry(ctx, key, nbytes, &i, path, sizeof path)) return -1;
    if (read_entry(ctx, i, path, nbytes, data)) {
        char quoted[160];
        return mt_error_context("storage '%s'", printable_text(quoted, sizeof quoted, key));
    }
    return 0;
}

/* ---------------------------------------------------------------- the archive */

/* The one entry named ARCHIVE/data.pkl: its prefix "ARCHIVE/" into a->prefix. */
static int find_data_pkl(archive *a)
{
    static const char PKL[] = "/data.pkl";
    zip_int64_t n = zip_get_num_entries(a->za, 0);
    for (zip_int64_t i = 0; i < n; i++) {
        const char *name = zip_get_name(a->za, (zip_uint64_t)i, ZIP_FL_ENC_RAW);
        if (!name) continue;
        size_t len = strlen(name);
        const char *slash = strchr(name, '/');
        if (len <= sizeof PKL - 1 || !slash || strcmp(slash, PKL) != 0) continue;
        if (a->prefix) {
            char one[160], two[160];
            return mt_error(
                "%s: two data.pkl in the archive (%sdata.pkl and %s): not one checkpoint", a->file,
                printable_text(one, sizeof one, a->prefix), printable_text(two, sizeof two, name));
        }
        a->prefix = mt_xstrdup(name);
        a->prefix[len - (sizeof PKL - 2)] = '\0';
    }
    if (!a->prefix)
        return mt_error("%s: a zip archive without ARCHIVE/data.pkl: not a torch.save checkpoint",
                        a->file);
    return 0;
}

/* ARCHIVE/byteorder is "little" or absent (files from before torch 2.1 are little-endian). */
static int check_byteorder(const archive *a)
{
    char path[4096];
    zip_int64_t i = locate(a, "byteorder", path, sizeof path);
    if (i < 0) return 0;
    size_t size;
    unsigned char *text = NULL;
    if (entry_size(a, i, path, &size)) return mt_error_context("%s", a->file);
    if (size > 16)
        return mt_error("%s: entry %s is %zu bytes, expected \"little\"", a->file, path, size);
    if (read_entry(a, i, path, size, &text)) return mt_error_context("%s", a->file);
    int rc = 0;
    if (strcmp((char *)text, "little") != 0) {
        char shown[64];
        rc = mt_error("%s: byte order '%s' (mtlab reads little-endian checkpoints only)", a->file,
                      printable_text(shown, sizeof shown, (char *)text));
    }
    free(text);
    return rc;
}

/* What a file that is not a zip archive probably is, for the message. */
static int not_a_zip(const unsigned char *data, size_t len, const char *name)
{
    if (len >= 9 && data[8] == '{')
        return mt_error(
            "%s: a safetensors file, not a PyTorch checkpoint (read it as model.safetensors)",
            name);
    return mt_error("%s: not a PyTorch checkpoint (neither a zip archive nor the legacy format)",
                    name);
}

mt_safetensors *mt_torch_open_buffer(const void *data, size_t len, const char *name)
{
    if (!name) name = "<buffer>";
    static const unsigned char ZIP_MAGIC[4] = {'P', 'K', 3, 4};
    if (torch_legacy_magic(data, len)) return torch_legacy_read(data, len, name);
    if (len < 4 || memcmp(data, ZIP_MAGIC, 4) != 0) {
        not_a_zip(data, len, name);
        return NULL;
    }
    zip_error_t zerr;
    zip_error_init(&zerr);
    zip_source_t *src = zip_source_buffer_create(len ? data : "", len, 0, &zerr);
    archive a = {.file = name};
    if (src) a.za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &zerr);
    if (!a.za) {
        mt_error("%s: not a readable zip archive: %s", name, zip_error_strerror(&zerr));
        zip_error_fini(&zerr);
        if (src) zip_source_free(src);
        return NULL;
    }
    zip_error_fini(&zerr);
    mt_safetensors *st = NULL;
    unsigned char *pkl = NULL;
    char path[4096];
    size_t pkl_len;
    if (find_data_pkl(&a) || check_byteorder(&a)) goto out;
    zip_int64_t i = locate(&a, "data.pkl", path, sizeof path);
    if (entry_size(&a, i, path, &pkl_len)) {
        mt_error_context("%s", name);
        goto out;
    }
    if (pkl_len > TORCH_MAX_PICKLE) {
        mt_error("%s: data.pkl is %zu bytes, more than the %d a checkpoint needs", name, pkl_len,
                 TORCH_MAX_PICKLE);
        goto out;
    }
    if (read_entry(&a, i, path, pkl_len, &pkl)) {
        mt_error_context("%s", name);
        goto out;
    }
    torch_storages storages = {storage_check, storage_load, &a};
    st = torch_read_state_dict(pkl, pkl_len, name, &storages);
out:
    free(pkl);
    free(a.prefix);
    zip_discard(a.za); /* also frees src */
    return st;
}

mt_safetensors *mt_torch_open(const char *path)
{
    void *map;
    size_t size;
    if (mt_file_map(path, &map, &size)) return NULL;
    mt_safetensors *st = mt_torch_open_buffer(map ? map : "", size, path);
    if (map) munmap(map, size);
    return st;
}
