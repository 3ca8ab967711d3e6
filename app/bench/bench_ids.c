/* The peer-inputs file: one source per line as decimal token ids, so mtlab and the peers
 * decode exactly the same ids with no tokenizer in between. */
#include "bench/bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"
#include "mtlab/files.h"
#include "mtlab/tokenizer.h"

#define MAX_LINES (1 << 20)
#define MAX_IDS_PER_LINE 4096

void bench_ids_free(bench_ids *x)
{
    for (int i = 0; i < x->n; i++) free(x->ids[i]);
    free(x->ids);
    free(x->len);
    memset(x, 0, sizeof *x);
}

/* The special token an id is in cfg's model (NULL: an ordinary token of a source): <pad> and
 * <eos> in every model; <sep> and <bos> too where the ids are mtlab's reserved ones (0-4,
 * tokenizer.h), whose prompts they frame. A hub checkpoint's other low ids are ordinary tokens
 * (opus-mt's <unk> is 1; a mamba-*-hf reserves 0 alone). */
static const char *special_name(const mt_model_config *cfg, long v)
{
    int reserved = cfg->sep_id == MT_SEP_ID && cfg->bos_id == MT_BOS_ID && cfg->unk_id == MT_UNK_ID;
    if (v == cfg->pad_id) return "<pad>";
    if (v == cfg->eos_id) return "<eos>";
    if (reserved && v == cfg->sep_id) return "<sep>";
    if (reserved && v == cfg->bos_id) return "<bos>";
    return NULL;
}

/* Parse one line into out (MAX_IDS_PER_LINE); the count, or -1 with the message. */
static int parse_line(char *line, const char *path, size_t lineno, const mt_model_config *cfg,
                      int32_t *out)
{
    int n = 0;
    for (char *tok = strtok(line, " \t\r\n"); tok; tok = strtok(NULL, " \t\r\n")) {
        if (n == MAX_IDS_PER_LINE)
            return mt_error("%s:%zu: more than %d token ids on one line", path, lineno,
                            MAX_IDS_PER_LINE);
        char *end;
        errno = 0;
        long v = strtol(tok, &end, 10);
        if (errno || *end || end == tok || v < 0 || v >= cfg->vocab_size)
            return mt_error("%s:%zu: field %d '%.24s' is not a token id in 0..%d", path, lineno,
                            n + 1, tok, cfg->vocab_size - 1);
        const char *special = special_name(cfg, v);
        if (special)
            return mt_error("%s:%zu: field %d '%ld' is the model's %s, which frames or pads a "
                            "source, not a token of one",
                            path, lineno, n + 1, v, special);
        out[n++] = (int32_t)v;
    }
    if (n == 0)
        return mt_error("%s:%zu: empty line (one source of token ids per line)", path, lineno);
    return n;
}

int bench_ids_read(const char *path, const mt_model_config *cfg, bench_ids *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = mt_file_fopen(path, MT_FILE_STREAM); /* read once: `<(cmd)` will do */
    if (!f) return -1;
    int32_t *row = mt_xmalloc(MAX_IDS_PER_LINE * sizeof *row);
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    int rc = 0, room = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if ((size_t)got != strlen(line)) {
            rc = mt_error("%s:%zu: NUL byte in a line of token ids", path, lineno);
            break;
        }
        int n = parse_line(line, path, lineno, cfg, row);
        if (n < 0) {
            rc = -1;
            break;
        }
        if (out->n == MAX_LINES) {
            rc = mt_error("%s: more than %d lines", path, MAX_LINES);
            break;
        }
        if (out->n == room) {
            room = room ? 2 * room : 64;
            out->ids = mt_xrealloc(out->ids, (size_t)room * sizeof *out->ids);
            out->len = mt_xrealloc(out->len, (size_t)room * sizeof *out->len);
        }
        out->ids[out->n] = mt_xmalloc((size_t)n * sizeof *row);
        memcpy(out->ids[out->n], row, (size_t)n * sizeof *row);
        out->len[out->n++] = n;
    }
    if (!rc && ferror(f)) rc = mt_error("%s: read error", path);
    if (!rc && out->n == 0) rc = mt_error("%s: no lines of token ids", path);
    free(line);
    free(row);
    fclose(f);
    if (rc) bench_ids_free(out);
    return rc;
}
