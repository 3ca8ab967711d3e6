/* Model bundles: a directory in Hugging Face layout
 *   config.json        architecture, sizes, special tokens (keys as transformers names them)
 *   model.safetensors  weights (F32, F16 or BF16), read through mtlab/safetensors.h
 *   tokenizer.model    sentencepiece model (mtlab/tokenizer.h loads it)
 *   corpus_stats.tsv   optional: training-set entity frequencies
 * and config.json itself, as a handle with typed getters whose errors name the file and the key:
 *   "m/config.json: key 'd_model' must be a positive integer, got \"abc\"". */
#ifndef MTLAB_BUNDLE_H
#define MTLAB_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "mtlab/safetensors.h"

/* ---------------------------------------------------------------- config.json
 * A JSON object. Nested objects ("ssm_cfg") are handles too, owned by the root handle; their
 * keys appear in messages as "ssm_cfg.d_state". A handle (getters included: they create the
 * nested handles) is for one thread at a time. */
typedef struct mt_config mt_config;

/* Read and parse a file (at most MT_CONFIG_MAX_BYTES); NULL (mt_last_error) on failure. */
mt_config *mt_config_load(const char *path);
/* Parse text[0..len); name is used in messages. */
mt_config *mt_config_parse(const char *text, size_t len, const char *name);
/* An empty object to fill with the setters; name is used in messages. */
mt_config *mt_config_new(const char *name);
/* Frees the root and every nested handle; NULL is fine. Only call it on a root. */
void mt_config_free(mt_config *c);

enum { MT_CONFIG_MAX_BYTES = 16 << 20 };

const char *mt_config_name(const mt_config *c);
/* 1 when key is present and not null. */
int mt_config_has(const mt_config *c, const char *key);

/* Required values: missing, null, the wrong type or out of [lo, hi] is an error naming the
 * file, the key, what was expected and what was found. */
int mt_config_int(const mt_config *c, const char *key, int lo, int hi, int *out);
/* Integers or reals, stored as float (JSON has no inf or nan). */
int mt_config_float(const mt_config *c, const char *key, double lo, double hi, float *out);
int mt_config_bool(const mt_config *c, const char *key, int *out);
/* The string (valid while c lives), or NULL. */
const char *mt_config_string(const mt_config *c, const char *key);
/* A list of at most cap integers in [lo, hi]; *n is set to its length. */
int mt_config_int_list(const mt_config *c, const char *key, int lo, int hi, int *out, int cap,
                       int *n);
/* A list of at most cap strings (valid while c lives). */
int mt_config_string_list(const mt_config *c, const char *key, const char **out, int cap, int *n);
/* A nested object, or NULL. */
const mt_config *mt_config_object(const mt_config *c, const char *key);

/* Optional values: a missing or null key gives def; anything else is checked as above. */
int mt_config_int_or(const mt_config *c, const char *key, int def, int lo, int hi, int *out);
int mt_config_float_or(const mt_config *c, const char *key, float def, double lo, double hi,
                       float *out);
int mt_config_bool_or(const mt_config *c, const char *key, int def, int *out);
/* def when missing or null; NULL (with an error) when present but not a string. */
const char *mt_config_string_or(const mt_config *c, const char *key, const char *def);

/* Setters replace any previous value; -1 when key or a string is not valid UTF-8. */
int mt_config_set_int(mt_config *c, const char *key, long long v);
/* Stored as the shortest decimal that reads back as the same float ("1e-05", not
 * "9.99999974737875e-06"); v must be finite. */
int mt_config_set_float(mt_config *c, const char *key, float v);
int mt_config_set_bool(mt_config *c, const char *key, int v);
int mt_config_set_null(mt_config *c, const char *key);
int mt_config_set_string(mt_config *c, const char *key, const char *v);
int mt_config_set_int_list(mt_config *c, const char *key, const int *v, int n);
int mt_config_set_string_list(mt_config *c, const char *key, const char *const *v, int n);
/* A new empty nested object (replacing any value), or NULL. */
mt_config *mt_config_set_object(mt_config *c, const char *key);

/* Top-level keys in sorted order: a malloc'd array of n pointers (valid while c lives and is
 * not modified); the caller frees the array. */
const char **mt_config_keys(const mt_config *c, int *n);
/* A value as one line of JSON for display ("[\"MambaForCausalLM\"]", "{\"d_state\": 16}", text
 * left in UTF-8), malloc'd; NULL when key is absent. */
char *mt_config_value_json(const mt_config *c, const char *key);
/* The whole object as transformers writes config.json (Python's json.dumps with indent=2 and
 * sorted keys, then a newline), byte for byte; malloc'd. */
char *mt_config_to_text(const mt_config *c);
/* Write mt_config_to_text atomically (temporary file + fsync + rename). */
int mt_config_save(const mt_config *c, const char *path);

/* ---------------------------------------------------------------- bundles */
typedef struct mt_bundle mt_bundle;

enum {
    MT_BUNDLE_NO_TOKENIZER = 1, /* do not require tokenizer.model (test fixtures, inspection) */
};

/* Open a bundle directory: checks that config.json, model.safetensors and tokenizer.model exist
 * (naming every missing one), loads config.json and maps and validates model.safetensors. A
 * checkpoint from the Hugging Face hub may hold pytorch_model.bin for the weights (read through
 * mtlab/torch_checkpoint.h) and tokenizer.json, or an opus-mt checkpoint's source.spm,
 * target.spm and vocab.json, for the tokenizer. */
mt_bundle *mt_bundle_open(const char *dir, unsigned flags);
void mt_bundle_close(mt_bundle *b);

const char *mt_bundle_dir(const mt_bundle *b);
/* The name a bundle directory goes by (pane titles, Lua's model.name): its last component, or
 * the run's name when that is `best` or `checkpoint` (runs/NAME/best is called NAME). */
void mt_bundle_name(char *out, size_t len, const char *dir);
const mt_config *mt_bundle_config(const mt_bundle *b);
const mt_safetensors *mt_bundle_weights(const mt_bundle *b);
/* The tokenizer for mt_tokenizer_load: "<dir>/tokenizer.model", "<dir>/tokenizer.json", or
 * "<dir>" itself for an opus-mt checkpoint (source.spm, target.spm, vocab.json); NULL when
 * absent (only with MT_BUNDLE_NO_TOKENIZER). */
const char *mt_bundle_tokenizer_path(const mt_bundle *b);
/* "<dir>/corpus_stats.tsv", or NULL when the bundle has none. */
const char *mt_bundle_corpus_stats_path(const mt_bundle *b);

/* A weight by name with its expected shape, converted to fp32 (mt_st_read_f32). */
int mt_bundle_read_f32(const mt_bundle *b, const char *name, int ndim, const int64_t *shape,
                       float *out);

typedef struct {
    const mt_config *config;
    const mt_st_write_tensor *tensors;
    int n_tensors;
    const mt_st_meta *metadata; /* "__metadata__" of model.safetensors (may be NULL) */
    int n_metadata;
    const char *tokenizer_path; /* copied in as tokenizer.model (a directory: as an opus-mt
                                 * checkpoint's source.spm, target.spm, vocab.json; a *.json
                                 * file: as tokenizer.json); NULL leaves it as it is */
    const char *corpus_stats_path; /* copied in as corpus_stats.tsv; NULL leaves it as it is */
} mt_bundle_contents;

/* Write a bundle directory (created when missing): every file is first written and fsync'ed
 * under a temporary name, and only when all are complete are they renamed into place. A write
 * that fails leaves the previous bundle as it was. */
int mt_bundle_write(const char *dir, const mt_bundle_contents *contents);

/* A bundle written where a user named it (`mtlab average -o`, `forward --save`): written whole
 * into a new directory beside the target, then renamed into place, so the target is never
 * half-written. An existing bundle there is replaced only when asked (replace), then in one
 * rename exchange; a directory holding anything but a bundle's files is never replaced. */
typedef struct {
    char *dir; /* the target */
    char *tmp; /* "<parent>/.<name>.new-<pid>-<n>": write the bundle here, then commit */
    int replace; /* 1: the target holds a bundle that commit replaces */
} mt_bundle_target;

enum { MT_BUNDLE_TARGET_EXISTS = -2 };
/* Checks the target and creates tmp (and the target's missing parents). 0, or
 * MT_BUNDLE_TARGET_EXISTS with "DIR: already exists and holds a model bundle; not
 * overwritten" (replace not given), or -1 ("DIR: holds steps/, which no model bundle holds:
 * not replaced", "DIR: not a directory", ...). The target may be missing or an empty directory. */
int mt_bundle_target_begin(mt_bundle_target *t, const char *dir, int replace);
/* Renames tmp into place (exchanging it with the old bundle, then removing that); releases t. */
int mt_bundle_target_commit(mt_bundle_target *t);
/* Removes tmp and what was written there, and releases t (safe after commit and on zeroes). */
void mt_bundle_target_discard(mt_bundle_target *t);

#endif
