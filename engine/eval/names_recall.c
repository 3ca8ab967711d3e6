/* test.names.tsv and the verbatim recall of substituted names (mtlab/names.h, docs/metrics.md §9).
 */
#include "eval/tsv_file.h"
#include "mtlab/error.h"
#include "mtlab/names.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_NAMES_LINE = 1024 };

typedef struct {
    mt_names_list *l;
    size_t rows, room, last_segment;
} names_reader;

void mt_names_list_free(mt_names_list *l)
{
    if (l->first)
        for (size_t i = 0; i < l->first[l->n_segments]; i++) free(l->names[i]);
    free(l->first);
    free(l->names);
    memset(l, 0, sizeof *l);
}

/* "# segments=N" */
static int names_header(void *user, char *line)
{
    names_reader *r = user;
    if (strncmp(line, "# segments=", 11) != 0 ||
        tsv_parse_count(line + 11, &r->l->n_segments) < 0 || r->l->n_segments == 0)
        return -1;
    r->l->first = mt_xcalloc(r->l->n_segments + 1, sizeof *r->l->first);
    return 0;
}

/* "SEGMENT<TAB>NAME<TAB>ORIGINAL": rows counted into first[segment] (made cumulative at the end).
 */
static int names_row(void *user, char *line, size_t len)
{
    names_reader *r = user;
    char *tab = memchr(line, '\t', len), *tab2 = tab ? strchr(tab + 1, '\t') : NULL;
    if (!tab || !tab2) return mt_error("expected SEGMENT<TAB>NAME<TAB>ORIGINAL");
    *tab = *tab2 = '\0';
    size_t segment;
    if (tsv_parse_count(line, &segment) < 0 || segment < 1 || segment > r->l->n_segments)
        return mt_error("segment '%s' is not in 1..%zu (the segments in the header)", line,
                        r->l->n_segments);
    if (segment < r->last_segment)
        return mt_error("segment %zu after segment %zu: rows go by segment", segment,
                        r->last_segment);
    const char *name = tab + 1;
    size_t count = 0;
    char *self = mt_name_replace(name, name, name, &count);
    free(self);
    if (count != 1) return mt_error("'%s' is not a single word", name);
    r->last_segment = segment;
    if (r->rows == r->room) {
        r->room = r->room * 2 + 64;
        r->l->names = mt_xrealloc(r->l->names, r->room * sizeof *r->l->names);
    }
    r->l->names[r->rows++] = mt_xstrdup(name);
    r->l->first[segment]++;
    return 0;
}

int mt_names_list_read(mt_names_list *l, const char *path)
{
    memset(l, 0, sizeof *l);
    names_reader r = {.l = l};
    tsv_reader tr = {MT_NAMES_MAGIC,
                     "a names file",
                     MAX_NAMES_LINE,
                     "# segments=N",
                     names_header,
                     names_row,
                     &r,
                     NULL};
    if (tsv_read(path, &tr) < 0) {
        for (size_t i = 0; i < r.rows; i++) free(l->names[i]);
        free(l->names);
        free(l->first);
        memset(l, 0, sizeof *l);
        return -1;
    }
    /* first[s] held the rows of segment s (from 1); summed, first[s] is where 0-based segment s
     * starts */
    for (size_t i = 1; i <= l->n_segments; i++) l->first[i] += l->first[i - 1];
    return 0;
}

void mt_names_recall_score(mt_names_recall *out, const mt_names_list *l, const char *const *hyps)
{
    memset(out, 0, sizeof *out);
    for (size_t s = 0; s < l->n_segments; s++)
        for (size_t k = l->first[s]; k < l->first[s + 1]; k++) {
            size_t count = 0;
            char *copy = mt_name_replace(hyps[s], l->names[k], l->names[k], &count);
            free(copy);
            out->names++;
            out->hits += count > 0;
        }
    out->recall = out->names ? (double)out->hits / (double)out->names : 0;
}
