/* Reading a tokenizer.json (jansson) into struct hf_bpe, checking it as we go: every part this
 * reader does not implement is refused by its key and name, and every token the file names
 * must agree with model.vocab (merges, added tokens, unk_token, the post-processor's ids). */
#include "tokenizer/hf_bpe_internal.h"

#include "mtlab/error.h"
#include "mtlab/utf8.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* GPT-2's pre-tokenizer expression, fixed inside `tokenizers`' ByteLevel (use_regex: true). */
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* Unicode's White_Space (what onig's \s matches), as the inside of a character class. */
static const char WHITE_SPACE_CLASS[] =
    "\\t-\\r\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}"
    "\\x{205f}\\x{3000}";

static int fail(const char *name, const char *fmt, ...) MT_PRINTF(2, 3);
static int fail(const char *name, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mt_error("%s: %s", name, msg);
}

int hf_bpe_is_json(const void *data, size_t len)
{
    const unsigned char *p = data, *end = p + len;
    if (len >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) p += 3;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p < end && *p == '{';
}

/* ---------------------------------------------------------------- regular expressions */

pcre2_code *hf_bpe_compile(const char *name, const char *key, const char *pattern, size_t len,
                           int literal)
{
    /* \s -> [White_Space], \S -> [^White_Space]; inside a class, the class's contents. */
    size_t cap = len * 4 + sizeof WHITE_SPACE_CLASS * 2 + 16, o = 0;
    char *out = mt_xmalloc(cap);
    int in_class = 0;
    for (size_t i = 0; i < len && !literal; i++) {
        if (o + sizeof WHITE_SPACE_CLASS + 8 > cap) out = mt_xrealloc(out, cap *= 2);
        char c = pattern[i];
        if (c == '\\' && i + 1 < len) {
            char e = pattern[i + 1];
            if ((e == 's' || e == 'S') && !(in_class && e == 'S')) {
                o += (size_t)sprintf(out + o, "%s%s%s",
                                     in_class   ? ""
                                     : e == 's' ? "["
                                                : "[^",
                                     WHITE_SPACE_CLASS, in_class ? "" : "]");
            } else {
                out[o++] = c;
                out[o++] = e;
            }
            i++;
            continue;
        }
        if (c == '[' && !in_class) {
            in_class = 1;
            out[o++] = c;
            /* a ']' right after '[' or '[^' is a literal, not the end */
            if (i + 1 < len && pattern[i + 1] == '^') out[o++] = pattern[++i];
            if (i + 1 < len && pattern[i + 1] == ']') out[o++] = pattern[++i];
            continue;
        }
        if (c == ']' && in_class) in_class = 0;
        out[o++] = c;
    }
    if (literal) {
        memcpy(out, pattern, len);
        o = len;
    }
    int err;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)out, o,
                                   literal ? PCRE2_LITERAL | PCRE2_UTF
                                           : PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK,
                                   &err, &at, NULL);
    free(out);
    if (!re) {
        PCRE2_UCHAR why[256];
        pcre2_get_error_message(err, why, sizeof why);
        fail(name, "%s: the regular expression does not compile (PCRE2: %s)", key, (char *)why);
        return NULL;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* where JIT is missing, matching is slower only */
    return re;
}

/* ---------------------------------------------------------------- JSON helpers */

/* obj[key] as a boolean; null or absent gives dflt. -1 (reported) for another type. */
static int get_bool(const char *name, const char *path, json_t *obj, const char *key, int dflt,
                    int *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v)) return fail(name, "%s.%s: expected true or false", path, key);
    *out = json_is_true(v);
    return 0;
}

/* obj[key] as a string, NULL when null or absent; -1 (reported) for another type. */
static int get_string(const char *name, const char *path, json_t *obj, const char *key,
                      const char **out)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_string(v)) return fail(name, "%s.%s: expected a string", path, key);
    *out = json_string_value(v);
    return 0;
}

/* The "type" of a part, "" when missing. */
static const char *type_of(json_t *part)
{
    const char *t = json_string_value(json_object_get(part, "type"));
    return t ? t : "";
}

static int check_id(const char *name, const char *key, json_t *v, int *id)
{
    if (!json_is_integer(v)) return fail(name, "%s: expected an integer id", key);
    json_int_t x = json_integer_value(v);
    if (x < 0 || x > HF_BPE_MAX_ID)
        return fail(name, "%s: id %lld is out of range (0..%d)", key, (long long)x, HF_BPE_MAX_ID);
    *id = (int)x;
    return 0;
}

/* ---------------------------------------------------------------- model */

static int vocab_id(const hf_bpe *t, const char *s, size_t len)
{
    size_t *v = strmap_get(&t->vocab, s, len);
    return v ? (int)*v : -1;
}

/* Here rather than in hf_bpe.c, which already needs this file (normalizers, merges): the
 * check of the post-processor's tokens needs it too, and the two objects must not need each
 * other (tests/check_cycles.sh). */
int hf_bpe_piece_to_id(const hf_bpe *t, const char *piece)
{
    if (!piece) return -1;
    int id = vocab_id(t, piece, strlen(piece));
    if (id >= 0) return id;
    for (size_t k = 0; k < t->n_added; k++)
        if (strcmp(t->pieces[t->added[k].id], piece) == 0) return t->added[k].id;
    return -1;
}

static void grow_ids(hf_bpe *t, int id)
{
    if (id < t->n_ids) return;
    int n = id + 1;
    t->pieces = mt_xrealloc(t->pieces, (size_t)n * sizeof *t->pieces);
    t->special = mt_xrealloc(t->special, (size_t)n);
    for (int i = t->n_ids; i < n; i++) {
        t->pieces[i] = NULL;
        t->special[i] = 0;
    }
    t->n_ids = n;
}

static int read_vocab(hf_bpe *t, json_t *vocab)
{
    if (!json_is_object(vocab))
        return fail(t->name, "model.vocab: expected an object of token: id");
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v)
    {
        char path[96];
        snprintf(path, sizeof path, "model.vocab[\"%.40s\"]", key);
        int id;
        if (check_id(t->name, path, v, &id)) return -1;
        size_t len = strlen(key);
        if (len == 0) return fail(t->name, "model.vocab: an empty token");
        grow_ids(t, id);
        if (t->pieces[id])
            return fail(t->name, "%s: id %d is also the token \"%.40s\"", path, id, t->pieces[id]);
        t->pieces[id] = mt_xstrdup(key);
        *strmap_put(&t->vocab, key, len, 0, NULL) = (size_t)id;
    }
    return 0;
}

static void put_merge(hf_bpe *t, int a, int b, uint32_t rank, int new_id)
{
    uint64_t pair = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    size_t mask = t->merge_cap - 1, i = (size_t)((pair * 0x9E3779B97F4A7C15ull) >> 20) & mask;
    while (t->merges[i].pair != HF_NO_PAIR && t->merges[i].pair != pair) i = (i + 1) & mask;
    /* a pair listed twice keeps its later rank, as `tokenizers`' map does */
    t->merges[i] = (hf_merge){pair, rank, new_id};
}

const hf_merge *hf_bpe_find_merge(const hf_bpe *t, int a, int b)
{
    if (!t->merge_cap) return NULL;
    uint64_t pair = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    size_t mask = t->merge_cap - 1, i = (size_t)((pair * 0x9E3779B97F4A7C15ull) >> 20) & mask;
    while (t->merges[i].pair != HF_NO_PAIR) {
        if (t->merges[i].pair == pair) return &t->merges[i];
        i = (i + 1) & mask;
    }
    return NULL;
}

static int read_merges(hf_bpe *t, json_t *merges)
{
    if (!json_is_array(merges)) return fail(t->name, "model.merges: expected an array");
    size_t n = json_array_size(merges);
    if (n > (size_t)HF_BPE_MAX_ID) return fail(t->name, "model.merges: %zu merges is too many", n);
    t->merge_cap = 1;
    while (t->merge_cap < 2 * n) t->merge_cap *= 2;
    t->merges = mt_xmalloc(t->merge_cap * sizeof *t->merges);
    for (size_t i = 0; i < t->merge_cap; i++) t->merges[i].pair = HF_NO_PAIR;
    size_t prefix_len = t->prefix ? strlen(t->prefix) : 0;
    char *joined = NULL;
    size_t joined_cap = 0;
    int rc = 0;
    for (size_t r = 0; r < n && rc == 0; r++) {
        json_t *m = json_array_get(merges, r);
        const char *a, *b;
        size_t alen, blen;
        /* "a b" (the older layout) or ["a", "b"] */
        if (json_is_string(m)) {
            a = json_string_value(m);
            const char *sp = strchr(a, ' ');
            if (!sp || strchr(sp + 1, ' ') || sp == a || !sp[1]) {
                rc = fail(t->name,
                          "model.merges[%zu]: \"%.40s\" is not two tokens separated by "
                          "one space",
                          r, a);
                break;
            }
            alen = (size_t)(sp - a);
            b = sp + 1;
            blen = strlen(b);
        } else if (json_is_array(m) && json_array_size(m) == 2 &&
                   json_is_string(json_array_get(m, 0)) && json_is_string(json_array_get(m, 1))) {
            a = json_string_value(json_array_get(m, 0));
            b = json_string_value(json_array_get(m, 1));
            alen = strlen(a);
            blen = strlen(b);
        } else {
            rc = fail(t->name, "model.merges[%zu]: expected \"a b\" or [\"a\", \"b\"]", r);
            break;
        }
        int ia = vocab_id(t, a, alen), ib = vocab_id(t, b, blen);
        if (ia < 0 || ib < 0) {
            rc = fail(t->name, "model.merges[%zu]: the token \"%.*s\" is not in model.vocab", r,
                      (int)(ia < 0 ? alen : blen) > 40 ? 40 : (int)(ia < 0 ? alen : blen),
                      ia < 0 ? a : b);
            break;
        }
        size_t bpart = blen >= prefix_len ? blen - prefix_len : 0;
        if (alen + bpart + 1 > joined_cap)
            joined = mt_xrealloc(joined, joined_cap = alen + bpart + 1);
        memcpy(joined, a, alen);
        memcpy(joined + alen, b + (blen - bpart), bpart);
        int inew = vocab_id(t, joined, alen + bpart);
        if (inew < 0) {
            joined[alen + bpart] = '\0';
            rc =
                fail(t->name, "model.merges[%zu]: the merged token \"%.40s\" is not in model.vocab",
                     r, joined);
            break;
        }
        put_merge(t, ia, ib, (uint32_t)r, inew);
    }
    free(joined);
    return rc;
}

static int read_model(hf_bpe *t, json_t *model)
{
    if (!json_is_object(model)) return fail(t->name, "model: expected an object");
    const char *type = json_string_value(json_object_get(model, "type"));
    /* `tokenizers` writes BPE's type; a file without one is read as BPE when it has merges */
    if (type ? strcmp(type, "BPE") != 0 : !json_object_get(model, "merges"))
        return fail(t->name, "model.type '%s' is not supported (mtlab reads BPE models only)",
                    type ? type : "(none)");
    json_t *dropout = json_object_get(model, "dropout");
    if (dropout && !json_is_null(dropout) &&
        !(json_is_number(dropout) && json_number_value(dropout) == 0))
        return fail(t->name, "model.dropout: BPE dropout is not supported (null expected)");
    const char *unk, *prefix, *suffix;
    if (get_string(t->name, "model", model, "unk_token", &unk) ||
        get_string(t->name, "model", model, "continuing_subword_prefix", &prefix) ||
        get_string(t->name, "model", model, "end_of_word_suffix", &suffix) ||
        get_bool(t->name, "model", model, "fuse_unk", 0, &t->fuse_unk) ||
        get_bool(t->name, "model", model, "byte_fallback", 0, &t->byte_fallback) ||
        get_bool(t->name, "model", model, "ignore_merges", 0, &t->ignore_merges))
        return -1;
    t->prefix = prefix ? mt_xstrdup(prefix) : NULL;
    t->suffix = suffix ? mt_xstrdup(suffix) : NULL;
    if (read_vocab(t, json_object_get(model, "vocab"))) return -1;
    t->unk_id = -1;
    if (unk && (t->unk_id = vocab_id(t, unk, strlen(unk))) < 0)
        return fail(t->name, "model.unk_token: \"%.40s\" is not in model.vocab", unk);
    for (int b = 0; b < 256; b++) {
        char piece[8];
        snprintf(piece, sizeof piece, "<0x%02X>", b);
        t->byte_ids[b] = vocab_id(t, piece, 6);
    }
    return read_merges(t, json_object_get(model, "merges"));
}

/* ---------------------------------------------------------------- normalizer */

static int read_normalizer(hf_bpe *t, json_t *n, const char *path, int depth)
{
    if (!n || json_is_null(n)) return 0;
    const char *type = type_of(n);
    if (strcmp(type, "Sequence") == 0 && depth < 4) {
        json_t *list = json_object_get(n, "normalizers");
        if (!json_is_array(list)) return fail(t->name, "%s.normalizers: expected an array", path);
        for (size_t i = 0; i < json_array_size(list); i++) {
            char sub[128];
            snprintf(sub, sizeof sub, "%s.normalizers[%zu]", path, i);
            if (read_normalizer(t, json_array_get(list, i), sub, depth + 1)) return -1;
        }
        return 0;
    }
    static const struct {
        const char *type;
        int options;
    } KNOWN[] = {
        {"NFC", UTF8PROC_STABLE | UTF8PROC_COMPOSE},
        {"NFD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE},
        {"NFKC", UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT},
        {"NFKD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT},
    };
    for (size_t k = 0; k < sizeof KNOWN / sizeof KNOWN[0]; k++) {
        if (strcmp(type, KNOWN[k].type) != 0) continue;
        if (t->n_norm == HF_BPE_MAX_STEPS) return fail(t->name, "%s: too many normalizers", path);
        t->norm[t->n_norm++] = KNOWN[k].options;
        return 0;
    }
    return fail(t->name,
                "%s.type '%.40s' is not supported (mtlab implements NFC, NFD, NFKC, "
                "NFKD and Sequence)",
                path, type);
}

char *hf_bpe_normalize(const hf_bpe *t, const char *text, size_t len, size_t *out_len)
{
    char *cur = mt_xmalloc(len + 1);
    memcpy(cur, text, len);
    cur[len] = '\0';
    for (size_t k = 0; k < t->n_norm; k++) {
        utf8proc_uint8_t *out = NULL;
        utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)cur, (utf8proc_ssize_t)len,
                                          &out, (utf8proc_option_t)t->norm[k]);
        free(cur);
        if (n < 0) {
            mt_error("%s: normalizer: %s", t->name, utf8proc_errmsg(n));
            return NULL;
        }
        cur = (char *)out;
        len = (size_t)n;
    }
    *out_len = len;
    return cur;
}

/* ---------------------------------------------------------------- pre-tokenizer */

static int add_pretok(hf_bpe *t, const char *path, hf_pretok p)
{
    if (t->n_pre == HF_BPE_MAX_STEPS) {
        if (p.re) pcre2_code_free(p.re);
        return fail(t->name, "%s: too many pre-tokenizers", path);
    }
    t->pre[t->n_pre++] = p;
    return 0;
}

static int read_pre_tokenizer(hf_bpe *t, json_t *p, const char *path, int depth)
{
    if (!p || json_is_null(p)) return 0;
    const char *type = type_of(p);
    if (strcmp(type, "Sequence") == 0 && depth < 4) {
        json_t *list = json_object_get(p, "pretokenizers");
        if (!json_is_array(list)) return fail(t->name, "%s.pretokenizers: expected an array", path);
        for (size_t i = 0; i < json_array_size(list); i++) {
            char sub[128];
            snprintf(sub, sizeof sub, "%s.pretokenizers[%zu]", path, i);
            if (read_pre_tokenizer(t, json_array_get(list, i), sub, depth + 1)) return -1;
        }
        return 0;
    }
    if (strcmp(type, "ByteLevel") == 0) {
        hf_pretok b = {.kind = HF_PRE_BYTE_LEVEL};
        int use_regex = 1;
        if (get_bool(t->name, path, p, "add_prefix_space", 1, &b.add_prefix_space) ||
            get_bool(t->name, path, p, "use_regex", 1, &use_regex))
            return -1;
        if (use_regex &&
            !(b.re = hf_bpe_compile(t->name, path, GPT2_PATTERN, strlen(GPT2_PATTERN), 0)))
            return -1;
        return add_pretok(t, path, b);
    }
    if (strcmp(type, "Split") == 0) {
        hf_pretok s = {.kind = HF_PRE_SPLIT};
        const char *behavior = json_string_value(json_object_get(p, "behavior"));
        if (!behavior || (strcmp(behavior, "Isolated") != 0 && strcmp(behavior, "Removed") != 0))
            return fail(t->name,
                        "%s.behavior '%.40s' is not supported (mtlab implements Isolated "
                        "and Removed)",
                        path, behavior ? behavior : "(none)");
        s.behavior = strcmp(behavior, "Isolated") == 0 ? HF_SPLIT_ISOLATED : HF_SPLIT_REMOVED;
        int invert = 0;
        if (get_bool(t->name, path, p, "invert", 0, &invert)) return -1;
        if (invert) return fail(t->name, "%s.invert: true is not supported", path);
        json_t *pattern = json_object_get(p, "pattern");
        json_t *re = json_object_get(pattern, "Regex"), *str = json_object_get(pattern, "String");
        json_t *src = json_is_string(re) ? re : str;
        if (!json_is_string(src))
            return fail(t->name, "%s.pattern: expected {\"Regex\": ...} or {\"String\": ...}",
                        path);
        char key[160];
        snprintf(key, sizeof key, "%s.pattern.%s", path, src == re ? "Regex" : "String");
        if (!(s.re = hf_bpe_compile(t->name, key, json_string_value(src), json_string_length(src),
                                    src == str)))
            return -1;
        return add_pretok(t, path, s);
    }
    return fail(t->name,
                "%s.type '%.40s' is not supported (mtlab implements ByteLevel, Split "
                "and Sequence)",
                path, type);
}

/* ---------------------------------------------------------------- added tokens */

static int read_added_tokens(hf_bpe *t, json_t *list)
{
    if (!list || json_is_null(list)) return 0;
    if (!json_is_array(list)) return fail(t->name, "added_tokens: expected an array");
    size_t n = json_array_size(list);
    t->added = mt_xcalloc(n ? n : 1, sizeof *t->added);
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(list, i);
        char path[48];
        snprintf(path, sizeof path, "added_tokens[%zu]", i);
        if (!json_is_object(a)) return fail(t->name, "%s: expected an object", path);
        const char *content;
        int id = 0, single_word = 0, lstrip = 0, rstrip = 0, normalized = 0, special = 0;
        if (get_string(t->name, path, a, "content", &content)) return -1;
        if (!content || !*content) return fail(t->name, "%s.content: missing or empty", path);
        char idkey[64];
        snprintf(idkey, sizeof idkey, "%s.id", path);
        if (check_id(t->name, idkey, json_object_get(a, "id"), &id) ||
            get_bool(t->name, path, a, "single_word", 0, &single_word) ||
            get_bool(t->name, path, a, "lstrip", 0, &lstrip) ||
            get_bool(t->name, path, a, "rstrip", 0, &rstrip) ||
            get_bool(t->name, path, a, "special", 0, &special) ||
            get_bool(t->name, path, a, "normalized", !special, &normalized))
            return -1;
        size_t len = strlen(content);
        int in_vocab = vocab_id(t, content, len);
        if (in_vocab >= 0 && in_vocab != id)
            return fail(t->name, "%s.id: \"%.40s\" has id %d, but model.vocab gives it id %d", path,
                        content, id, in_vocab);
        grow_ids(t, id);
        if (in_vocab < 0 && t->pieces[id])
            return fail(t->name, "%s.id: id %d of \"%.40s\" is already the token \"%.40s\"", path,
                        id, content, t->pieces[id]);
        if (in_vocab < 0) t->pieces[id] = mt_xstrdup(content);
        t->special[id] = (unsigned char)special;
        hf_added *x = &t->added[t->n_added++];
        x->id = id;
        x->single_word = (unsigned char)single_word;
        x->lstrip = (unsigned char)lstrip;
        x->rstrip = (unsigned char)rstrip;
        x->normalized = (unsigned char)normalized;
        x->special = (unsigned char)special;
        /* a normalized token is looked for in normalized text, so in its normalized form */
        x->content = normalized ? hf_bpe_normalize(t, content, len, &x->len) : mt_xstrdup(content);
        if (!x->content) return mt_error_context("%s", path);
        if (!normalized) x->len = len;
        if (x->len == 0) return fail(t->name, "%s.content: empty once normalized", path);
    }
    return 0;
}

/* ---------------------------------------------------------------- decoder, post-processor */

static int read_decoder(hf_bpe *t, json_t *d)
{
    if (!d || json_is_null(d)) return 0;
    if (strcmp(type_of(d), "ByteLevel") != 0)
        return fail(t->name, "decoder.type '%.40s' is not supported (mtlab implements ByteLevel)",
                    type_of(d));
    t->decoder_byte_level = 1;
    return 0;
}

/* A post-processor's special token (text, id) must be the vocabulary's. */
static int check_special(hf_bpe *t, const char *path, const char *text, json_t *idv)
{
    int id;
    if (!text) return fail(t->name, "%s: expected a token", path);
    if (check_id(t->name, path, idv, &id)) return -1;
    if (id >= t->n_ids || !t->pieces[id] || strcmp(t->pieces[id], text) != 0)
        return fail(t->name, "%s: \"%.40s\" is id %d here, but the vocabulary gives it %d", path,
                    text, id, hf_bpe_piece_to_id(t, text));
    return 0;
}

/* The post-processor only adds special tokens (mt_tokenizer_encode adds none), so it is not
 * applied; its ids are checked, since a model reads them. */
static int read_post_processor(hf_bpe *t, json_t *p, const char *path, int depth)
{
    if (!p || json_is_null(p)) return 0;
    const char *type = type_of(p);
    char key[160];
    if (strcmp(type, "ByteLevel") == 0) return 0;
    if (strcmp(type, "Sequence") == 0 && depth < 4) {
        json_t *list = json_object_get(p, "processors");
        for (size_t i = 0; i < json_array_size(list); i++) {
            snprintf(key, sizeof key, "%s.processors[%zu]", path, i);
            if (read_post_processor(t, json_array_get(list, i), key, depth + 1)) return -1;
        }
        return 0;
    }
    if (strcmp(type, "TemplateProcessing") == 0) {
        const char *text;
        json_t *tok;
        json_object_foreach(json_object_get(p, "special_tokens"), text, tok)
        {
            json_t *ids = json_object_get(tok, "ids"), *toks = json_object_get(tok, "tokens");
            if (!json_is_array(ids) || json_array_size(ids) != json_array_size(toks))
                return fail(t->name,
                            "%s.special_tokens[\"%.40s\"]: ids and tokens differ in "
                            "length",
                            path, text);
            for (size_t i = 0; i < json_array_size(ids); i++) {
                snprintf(key, sizeof key, "%s.special_tokens[\"%.40s\"].ids[%zu]", path, text, i);
                if (check_special(t, key, json_string_value(json_array_get(toks, i)),
                                  json_array_get(ids, i)))
                    return -1;
            }
        }
        return 0;
    }
    if (strcmp(type, "RobertaProcessing") == 0 || strcmp(type, "BertProcessing") == 0) {
        static const char *const KEYS[] = {"sep", "cls"};
        for (int k = 0; k < 2; k++) {
            json_t *pair = json_object_get(p, KEYS[k]);
            snprintf(key, sizeof key, "%s.%s", path, KEYS[k]);
            if (check_special(t, key, json_string_value(json_array_get(pair, 0)),
                              json_array_get(pair, 1)))
                return -1;
        }
        return 0;
    }
    return fail(t->name,
                "%s.type '%.40s' is not supported (mtlab knows ByteLevel, "
                "TemplateProcessing, RobertaProcessing, BertProcessing and Sequence)",
                path, type);
}

/* ---------------------------------------------------------------- the file */

hf_bpe *hf_bpe_load_bytes(const void *data, size_t len, const char *name)
{
    json_error_t jerr;
    json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        mt_error("%s:%d:%d: not a tokenizer.json: %s", name, jerr.line, jerr.column,
                 mt_error_oneline(jerr.text));
        return NULL;
    }
    hf_bpe *t = mt_xcalloc(1, sizeof *t);
    t->name = mt_xstrdup(name);
    t->unk_id = -1;
    int rc = -1;
    if (!json_is_object(root)) {
        fail(name, "not a tokenizer.json: expected a JSON object");
    } else if (!json_object_get(root, "model")) {
        fail(name, "model: missing (not a tokenizer.json?)");
    } else if (read_normalizer(t, json_object_get(root, "normalizer"), "normalizer", 0) == 0 &&
               read_model(t, json_object_get(root, "model")) == 0 &&
               read_added_tokens(t, json_object_get(root, "added_tokens")) == 0 &&
               read_pre_tokenizer(t, json_object_get(root, "pre_tokenizer"), "pre_tokenizer", 0) ==
                   0 &&
               read_decoder(t, json_object_get(root, "decoder")) == 0 &&
               read_post_processor(t, json_object_get(root, "post_processor"), "post_processor",
                                   0) == 0) {
        rc = 0;
    }
    json_decref(root);
    if (rc == 0 && t->n_ids == 0) rc = fail(name, "model.vocab: empty");
    /* every id below the vocabulary size names a token, as mt_tokenizer promises its callers */
    for (int id = 0; rc == 0 && id < t->n_ids; id++)
        if (!t->pieces[id])
            rc = fail(name, "model.vocab: no token has id %d (ids run 0..%d)", id, t->n_ids - 1);
    if (rc) {
        hf_bpe_free(t);
        return NULL;
    }
    return t;
}

void hf_bpe_free(hf_bpe *t)
{
    if (!t) return;
    for (int i = 0; i < t->n_ids; i++) free(t->pieces[i]);
    free(t->pieces);
    free(t->special);
    strmap_free(&t->vocab);
    free(t->merges);
    for (size_t i = 0; i < t->n_added; i++) free(t->added[i].content);
    free(t->added);
    for (size_t i = 0; i < t->n_pre; i++)
        if (t->pre[i].re) pcre2_code_free(t->pre[i].re);
    free(t->prefix);
    free(t->suffix);
    free(t->name);
    free(t);
}
