/* Byte-level BPE: encoding and decoding as PyPI's `tokenizers` does (see hf_bpe.h for the
 * steps; hf_bpe_load.c reads the file). Each step follows the Rust code it names, so that the
 * ids agree to the last one (tests/unit/test_hf_bpe.c, against ids `tokenizers` wrote). */
#include "tokenizer/hf_bpe_internal.h"

#include "mtlab/error.h"
#include "mtlab/utf8.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

typedef struct {
    int *v;
    size_t n, cap;
} id_list;

static void push_id(id_list *l, int id)
{
    if (l->n == l->cap)
        l->v = mt_xrealloc(l->v, (l->cap = l->cap ? 2 * l->cap : 64) * sizeof *l->v);
    l->v[l->n++] = id;
}

/* A part of the text on its way through the steps: owned bytes, or an added token's id. */
typedef struct {
    char *s;
    size_t n;
    int id; /* -1 for text */
} text_part;

typedef struct {
    text_part *v;
    size_t n, cap;
} part_list;

static void push_part(part_list *l, const char *s, size_t n, int id)
{
    if (n == 0 && id < 0) return; /* `tokenizers` drops empty splits */
    if (l->n == l->cap)
        l->v = mt_xrealloc(l->v, (l->cap = l->cap ? 2 * l->cap : 16) * sizeof *l->v);
    char *copy = mt_xmalloc(n + 1);
    memcpy(copy, s, n);
    copy[n] = '\0';
    l->v[l->n++] = (text_part){copy, n, id};
}

static void free_parts(part_list *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->v[i].s);
    free(l->v);
    *l = (part_list){0};
}

/* ---------------------------------------------------------------- character classes */

/* Unicode's White_Space: what Rust's regex \s (lstrip, rstrip) and onig's \s match. */
static int is_white_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* Rust's regex \w: Alphabetic, marks, decimal digits, connector punctuation, joiners. */
static int is_word(uint32_t c)
{
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC: return 1;
    default: return c == 0x200C || c == 0x200D;
    }
}

static uint32_t cp_at(const char *s, size_t n)
{
    uint32_t c = 0;
    mt_utf8_next(s, n, &c);
    return c;
}

/* ---------------------------------------------------------------- added tokens */

/* Cut the added tokens of one kind (normalized or not) out of s[0..n), as `tokenizers`'
 * AddedVocabulary::find_matches does: leftmost-longest matches (the search goes on from each
 * match's end), single_word matches between non-word characters only, lstrip and rstrip
 * taking the white space beside them. */
static void split_added(const hf_bpe *t, const char *s, size_t n, int normalized, part_list *out)
{
    size_t start_offset = 0, pos = 0;
    while (pos < n) {
        const hf_added *best = NULL;
        size_t at = pos;
        for (; at < n && !best; at++)
            for (size_t k = 0; k < t->n_added; k++) {
                const hf_added *a = &t->added[k];
                if (a->normalized != normalized || a->len > n - at || (best && a->len <= best->len))
                    continue;
                if (memcmp(s + at, a->content, a->len) == 0) best = a;
            }
        if (!best) break;
        size_t start = at - 1, stop = start + best->len;
        pos = stop;
        if (best->single_word) {
            int word_before = start > 0 && is_word(cp_at(s + mt_utf8_prev(s, start), start));
            int word_after = stop < n && is_word(cp_at(s + stop, n - stop));
            if (word_before || word_after) continue;
        }
        if (best->lstrip) {
            size_t k = start;
            while (k > 0) {
                size_t p = mt_utf8_prev(s, k);
                if (!is_white_space(cp_at(s + p, k - p))) break;
                k = p;
            }
            start = k > start_offset ? k : start_offset;
        }
        if (best->rstrip) {
            uint32_t c;
            int len;
            while (stop < n && (len = mt_utf8_next(s + stop, n - stop, &c)) > 0 &&
                   is_white_space(c))
                stop += (size_t)len;
        }
        if (start_offset < start) push_part(out, s + start_offset, start - start_offset, -1);
        push_part(out, "", 0, best->id);
        start_offset = stop;
    }
    if (start_offset < n) push_part(out, s + start_offset, n - start_offset, -1);
}

/* ---------------------------------------------------------------- pre-tokenizers */

/* Split s[0..n) at the matches of re as onig's find_iter walks them (an empty match right
 * after the previous match is skipped by one character), keeping the matches (Isolated) or
 * not (Removed), and the text between them. -1 when PCRE2 gives up (match limit). */
static int split_regex(const hf_bpe *t, const pcre2_code *re, int keep_matches, const char *s,
                       size_t n, part_list *out)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    size_t prev = 0, last_end = 0;
    int have_last = 0, rc = 0;
    while (last_end <= n) {
        int r = pcre2_match(re, (PCRE2_SPTR)s, n, last_end, PCRE2_NO_UTF_CHECK, md, NULL);
        if (r == PCRE2_ERROR_NOMATCH) break;
        if (r < 0) {
            PCRE2_UCHAR why[256];
            pcre2_get_error_message(r, why, sizeof why);
            rc = mt_error("%s: pre_tokenizer: the regular expression failed (PCRE2: %s)", t->name,
                          (char *)why);
            break;
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (ms == me && have_last && me == last_end) {
            last_end +=
                last_end < n ? (size_t)mt_utf8_next(s + last_end, n - last_end, &(uint32_t){0}) : 1;
            have_last = 0;
            continue;
        }
        if (prev < ms) push_part(out, s + prev, ms - prev, -1);
        if (keep_matches) push_part(out, s + ms, me - ms, -1);
        prev = me;
        last_end = me;
        have_last = 1;
    }
    pcre2_match_data_free(md);
    if (prev < n) push_part(out, s + prev, n - prev, -1);
    return rc;
}

/* GPT-2's byte -> printable character: bytes that print as themselves keep their code point,
 * the others (controls, space, 0x7F..0xA0, soft hyphen) take U+0100 onwards in byte order. */
static uint32_t byte_char(unsigned b)
{
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) return b;
    if (b <= 0x20) return 0x100 + b;
    if (b <= 0xA0) return 0x100 + 33 + (b - 0x7F);
    return 0x100 + 67; /* 0xAD */
}

/* The inverse: the byte a printable character stands for, -1 for any other character. */
static int char_byte(uint32_t c)
{
    if ((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF))
        return (int)c;
    if (c >= 0x100 && c <= 0x120) return (int)(c - 0x100);
    if (c >= 0x121 && c <= 0x142) return (int)(c - 0x121 + 0x7F);
    if (c == 0x143) return 0xAD;
    return -1;
}

static void byte_level_map(text_part *p)
{
    char *out = mt_xmalloc(2 * p->n + 1), *o = out;
    for (size_t i = 0; i < p->n; i++) o += mt_utf8_put(byte_char((unsigned char)p->s[i]), o);
    *o = '\0';
    free(p->s);
    p->s = out;
    p->n = (size_t)(o - out);
}

/* One pre-tokenizer over every text piece of *l. */
static int pre_tokenize_step(const hf_bpe *t, const hf_pretok *step, part_list *l)
{
    part_list out = {0};
    int rc = 0;
    for (size_t i = 0; i < l->n && rc == 0; i++) {
        text_part *p = &l->v[i];
        if (step->kind == HF_PRE_BYTE_LEVEL) {
            size_t from = out.n;
            if (step->add_prefix_space && p->s[0] != ' ') {
                char *spaced = mt_xmalloc(p->n + 2);
                spaced[0] = ' ';
                memcpy(spaced + 1, p->s, p->n + 1);
                free(p->s);
                p->s = spaced;
                p->n++;
            }
            if (step->re) rc = split_regex(t, step->re, 1, p->s, p->n, &out);
            else push_part(&out, p->s, p->n, -1);
            for (size_t k = from; k < out.n; k++) byte_level_map(&out.v[k]);
        } else {
            rc = split_regex(t, step->re, step->behavior == HF_SPLIT_ISOLATED, p->s, p->n, &out);
        }
    }
    free_parts(l);
    *l = out;
    return rc;
}

/* ---------------------------------------------------------------- the BPE model */

typedef struct {
    int id;
    int prev, next; /* neighbours' indices, -1 at the ends */
    size_t len; /* bytes of the word it covers; 0 once merged into its left neighbour */
} symbol;

typedef struct {
    uint32_t rank;
    int pos;
    int new_id;
} queued_merge;

/* Min-heap on (rank, pos): the lowest rank first, the leftmost among equals. */
static int merge_before(queued_merge a, queued_merge b)
{
    return a.rank != b.rank ? a.rank < b.rank : a.pos < b.pos;
}

typedef struct {
    queued_merge *v;
    size_t n, cap;
} merge_heap;

static void heap_push(merge_heap *h, queued_merge m)
{
    if (h->n == h->cap)
        h->v = mt_xrealloc(h->v, (h->cap = h->cap ? 2 * h->cap : 32) * sizeof *h->v);
    size_t i = h->n++;
    while (i > 0 && merge_before(m, h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = m;
}

static queued_merge heap_pop(merge_heap *h)
{
    queued_merge top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && merge_before(h->v[c + 1], h->v[c])) c++;
        if (!merge_before(h->v[c], last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = last;
    return top;
}

static void queue_pair(const hf_bpe *t, merge_heap *h, const symbol *sym, int pos)
{
    const hf_merge *m = hf_bpe_find_merge(t, sym[pos].id, sym[sym[pos].next].id);
    if (m) heap_push(h, (queued_merge){m->rank, pos, m->new_id});
}

static void add_symbol(symbol **sym, size_t *n, size_t *cap, int id, size_t len)
{
    if (*n == *cap) *sym = mt_xrealloc(*sym, (*cap = *cap ? 2 * *cap : 32) * sizeof **sym);
    (*sym)[*n] = (symbol){id, (int)*n - 1, (int)*n + 1, len};
    (*n)++;
}

/* BPE::merge_word then Word::merge_all: one symbol per character (with the subword prefix and
 * suffix, byte fallback or the unknown token), then merges by rank. */
static void bpe_word(const hf_bpe *t, const char *w, size_t n, id_list *out)
{
    if (t->ignore_merges) {
        size_t *v = strmap_get(&t->vocab, w, n);
        if (v) {
            push_id(out, (int)*v);
            return;
        }
    }
    symbol *sym = NULL;
    size_t ns = 0, cap = 0;
    int unk_len = 0; /* bytes of a pending unknown symbol */
    size_t plen = t->prefix ? strlen(t->prefix) : 0, slen = t->suffix ? strlen(t->suffix) : 0;
    char *buf = mt_xmalloc(plen + slen + 8);
    for (size_t i = 0; i < n;) {
        uint32_t c;
        int len = mt_utf8_next(w + i, n - i, &c);
        if (len <= 0) len = 1;
        size_t k = 0;
        if (i > 0 && t->prefix) memcpy(buf, t->prefix, k = plen);
        memcpy(buf + k, w + i, (size_t)len);
        k += (size_t)len;
        if (i + (size_t)len == n && t->suffix) memcpy(buf + k, t->suffix, slen), k += slen;
        size_t *v = strmap_get(&t->vocab, buf, k);
        if (v) {
            if (unk_len) add_symbol(&sym, &ns, &cap, t->unk_id, (size_t)unk_len), unk_len = 0;
            add_symbol(&sym, &ns, &cap, (int)*v, (size_t)len);
        } else {
            int all_bytes = t->byte_fallback;
            for (size_t b = 0; b < k && all_bytes; b++)
                all_bytes = t->byte_ids[(unsigned char)buf[b]] >= 0;
            if (all_bytes) {
                for (size_t b = 0; b < k; b++)
                    add_symbol(&sym, &ns, &cap, t->byte_ids[(unsigned char)buf[b]], 1);
            } else if (t->unk_id >= 0) {
                if (unk_len && !t->fuse_unk)
                    add_symbol(&sym, &ns, &cap, t->unk_id, (size_t)unk_len), unk_len = 0;
                unk_len += len;
            }
        }
        i += (size_t)len;
    }
    if (unk_len) add_symbol(&sym, &ns, &cap, t->unk_id, (size_t)unk_len);
    free(buf);
    if (ns) sym[ns - 1].next = -1;

    merge_heap h = {0};
    for (size_t i = 0; i + 1 < ns; i++) queue_pair(t, &h, sym, (int)i);
    while (h.n) {
        queued_merge top = heap_pop(&h);
        symbol *s = &sym[top.pos];
        if (s->len == 0 || s->next < 0) continue;
        symbol *right = &sym[s->next];
        /* an entry queued before either side changed is stale */
        const hf_merge *m = hf_bpe_find_merge(t, s->id, right->id);
        if (!m || m->new_id != top.new_id) continue;
        s->id = top.new_id;
        s->len += right->len;
        s->next = right->next;
        right->len = 0;
        if (s->next >= 0) sym[s->next].prev = top.pos;
        if (s->prev >= 0) queue_pair(t, &h, sym, s->prev);
        if (s->next >= 0) queue_pair(t, &h, sym, top.pos);
    }
    free(h.v);
    for (size_t i = 0; i < ns; i++)
        if (sym[i].len) push_id(out, sym[i].id);
    free(sym);
}

/* ---------------------------------------------------------------- encode, decode */

/* One piece that holds no non-normalized added token: normalize, cut out the normalized
 * added tokens, pre-tokenize, then BPE. */
static int encode_text(const hf_bpe *t, const char *s, size_t n, id_list *out)
{
    size_t nn;
    char *norm = hf_bpe_normalize(t, s, n, &nn);
    if (!norm) return -1;
    part_list parts = {0};
    split_added(t, norm, nn, 1, &parts);
    free(norm);
    int rc = 0;
    for (size_t i = 0; i < parts.n && rc == 0; i++) {
        if (parts.v[i].id >= 0) {
            push_id(out, parts.v[i].id);
            continue;
        }
        part_list words = {0};
        push_part(&words, parts.v[i].s, parts.v[i].n, -1);
        for (size_t k = 0; k < t->n_pre && rc == 0; k++)
            rc = pre_tokenize_step(t, &t->pre[k], &words);
        for (size_t w = 0; w < words.n && rc == 0; w++)
            bpe_word(t, words.v[w].s, words.v[w].n, out);
        free_parts(&words);
    }
    free_parts(&parts);
    return rc;
}

int hf_bpe_encode(const hf_bpe *t, const char *text, size_t len, int **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    size_t bad = mt_utf8_invalid_offset(text, len);
    if (bad < len) return mt_error("%s: invalid UTF-8 at byte %zu", t->name, bad);
    id_list out = {0};
    part_list parts = {0};
    split_added(t, text, len, 0, &parts);
    int rc = 0;
    for (size_t i = 0; i < parts.n && rc == 0; i++) {
        if (parts.v[i].id >= 0) push_id(&out, parts.v[i].id);
        else rc = encode_text(t, parts.v[i].s, parts.v[i].n, &out);
    }
    free_parts(&parts);
    if (rc) {
        free(out.v);
        return -1;
    }
    *ids = out.v ? out.v : mt_xmalloc(sizeof(int));
    *n = out.n;
    return 0;
}

/* ByteLevel's decoder on one token of plen bytes: a token whose every character stands for a
 * byte becomes those bytes; any other token is kept as it is spelled. Writes at most plen
 * bytes into out; returns how many. */
static size_t byte_level_bytes(const char *p, size_t plen, char *out)
{
    size_t o = 0;
    uint32_t c;
    int l = 1, b = 0;
    for (size_t k = 0; k < plen && b >= 0; k += (size_t)l) {
        l = mt_utf8_next(p + k, plen - k, &c);
        if (l <= 0 || (b = char_byte(c)) < 0) break;
        out[o++] = (char)b;
    }
    if (b < 0 || l <= 0) {
        memcpy(out, p, plen);
        o = plen;
    }
    return o;
}

char *hf_bpe_decode(const hf_bpe *t, const int *ids, size_t n, int skip_special)
{
    size_t cap = 64, len = 0;
    char *raw = mt_xmalloc(cap);
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        const char *p = hf_bpe_id_to_piece(t, ids[i]);
        if (!p) {
            free(raw);
            mt_error("%s: cannot decode id %d (position %zu): no token has it", t->name, ids[i], i);
            return NULL;
        }
        if (skip_special && t->special[ids[i]]) continue;
        size_t plen = strlen(p);
        if (len + plen + 2 > cap) raw = mt_xrealloc(raw, cap = 2 * (len + plen + 2));
        if (!t->decoder_byte_level) {
            /* no decoder: `tokenizers` joins the tokens with spaces */
            if (!first) raw[len++] = ' ';
            memcpy(raw + len, p, plen);
            len += plen;
            first = 0;
            continue;
        }
        len += byte_level_bytes(p, plen, raw + len);
    }
    char *text = mt_xmalloc(3 * len + 1);
    size_t out = mt_utf8_repair(raw, len, text, NULL);
    text[out] = '\0';
    free(raw);
    return text;
}

int hf_bpe_vocab_size(const hf_bpe *t) { return t->n_ids; }

const char *hf_bpe_id_to_piece(const hf_bpe *t, int id)
{
    return id >= 0 && id < t->n_ids ? t->pieces[id] : NULL;
}

int hf_bpe_is_special(const hf_bpe *t, int id)
{
    return id >= 0 && id < t->n_ids && t->special[id];
}

char *hf_bpe_token_bytes(const hf_bpe *t, int id, size_t *n)
{
    const char *p = hf_bpe_id_to_piece(t, id);
    if (!p) return NULL;
    size_t plen = strlen(p);
    char *out = mt_xmalloc(plen + 1);
    if (t->decoder_byte_level && !t->special[id]) *n = byte_level_bytes(p, plen, out);
    else {
        memcpy(out, p, plen);
        *n = plen;
    }
    out[*n] = '\0';
    return out;
}

char *hf_bpe_spell(const hf_bpe *t, const char *bytes, size_t n)
{
    char *out = mt_xmalloc(2 * n + 1), *o = out; /* a byte's character takes at most 2 */
    if (!t->decoder_byte_level) {
        memcpy(out, bytes, n);
        o += n;
    } else {
        for (size_t i = 0; i < n; i++) o += mt_utf8_put(byte_char((unsigned char)bytes[i]), o);
    }
    *o = '\0';
    return out;
}
