/* Integrated gradients' rules (attribution_rules.h): the nodes along the path from the baseline
 * to the input at which each target row is differentiated, and the weights that sum their
 * scores. The evaluations themselves come from the caller's evaluator (the backward passes of
 * attribution_pass.c), requested in batches in order of row. */
#include "models/attribution_rules.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mtlab/error.h"

/* Gauss-Legendre nodes and weights of n points on [0, 1] (Newton's iteration on P_n from
 * Chebyshev-like starts, as captum's default "gausslegendre" method): the nodes crowd towards
 * both ends, where the path from a zero baseline changes fastest (a norm of a nearly-zero
 * input, docs/attribution.md), and a smooth integrand is integrated to high order. */
void attr_gauss_legendre(int n, double *x01, double *w01)
{
    for (int i = 0; i < n; i++) {
        double x = cos(M_PI * (i + 0.75) / (n + 0.5)), dp = 1.0;
        for (int it = 0; it < 100; it++) {
            double p0 = 1.0, p1 = x; /* P_0, P_1, then up to P_n */
            for (int k = 2; k <= n; k++) {
                double p2 = ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k;
                p0 = p1;
                p1 = p2;
            }
            if (n == 1) p0 = 1.0, p1 = x;
            dp = n * (x * p1 - p0) / (x * x - 1.0);
            double dx = p1 / dp;
            x -= dx;
            if (fabs(dx) < 1e-15) break;
        }
        x01[i] = (1.0 - x) / 2.0;
        w01[i] = 1.0 / ((1.0 - x * x) * dp * dp);
    }
}

/* Saliency and input x gradient (steps 1, at the input), and integrated gradients with the
 * steps Gauss-Legendre nodes for every row: scores weighted into acc (rows, cols). */
int attr_integrate_fixed(const attr_evaluator *ev, mt_attr_method method, int steps, double *acc,
                         double *logp)
{
    double *node = mt_xmalloc((size_t)steps * sizeof *node);
    double *weight = mt_xmalloc((size_t)steps * sizeof *weight);
    if (method == MT_ATTR_INTEGRATED_GRADIENTS) attr_gauss_legendre(steps, node, weight);
    else node[0] = weight[0] = 1.0;
    long n = (long)ev->rows * steps;
    attr_eval *evals = mt_xmalloc((size_t)n * sizeof *evals);
    double *w = mt_xmalloc((size_t)n * sizeof *w);
    for (long i = 0; i < n; i++) {
        evals[i] = (attr_eval){(int)(i / steps), (float)node[i % steps]};
        w[i] = weight[i % steps];
    }
    int rc = ev->evaluate(ev->ctx, evals, n, &(attr_sink){w, acc, logp});
    free(node);
    free(weight);
    free(evals);
    free(w);
    return rc;
}

/* The adaptive rule's first partition: pieces of [0, 1] of equal length, three nodes each (ends
 * shared), 2 * ADAPTIVE_FIRST_PIECES evaluations (none at alpha = 0, below; fewer pieces when
 * steps is below that). */
#define ADAPTIVE_FIRST_PIECES 4
/* Each round splits the pieces with the largest residuals, a third of a row's pieces (at least
 * one): fewer rounds of bigger passes than one split a round (64 steps: 10 rounds, not 29), at
 * the cost of splitting some that did not need it (docs/attribution.md §2 has the figures). */
#define ADAPTIVE_SPLIT_SHARE 3

/* How a piece [a, b] integrates: Simpson's rule on a, its midpoint m and b; the piece that starts
 * at the baseline (alpha = 0) the midpoint rule on m alone, since the gradient at a zero
 * baseline is the norms' singularity (1/sqrt(eps) per norm, docs/attribution.md §2) and no
 * gradient is taken there; the trapezoid rule on a and b, the one piece a row's odd last
 * evaluation leaves. */
typedef enum { PIECE_SIMPSON, PIECE_OPEN, PIECE_TRAPEZOID } attr_piece_rule;

/* A piece [alpha[a], alpha[b]] of a row's partition of [0, 1]: indices into the row's points. */
typedef struct {
    int a, m, b;
    attr_piece_rule rule;
} attr_piece;

/* Every row's points so far: point 0 is alpha = 0 (its log-prob from the baseline's forward
 * pass, no gradient), the others each one gradient evaluation, at most steps of them. */
typedef struct {
    int points, cols; /* points per row: steps + 1 */
    double *alpha, *logp, *sum; /* (rows, points) the path point, the row's log-prob f there,
                                 * and the sum of its scores (the integrand of the row's sum) */
    double *scores; /* (rows, points, cols) */
    attr_piece *pieces; /* (rows, points) */
    int *n_pieces, *used; /* (rows) pieces; points used (evaluations + 1) */
    attr_eval *ev; /* (n) this round's requests, in order of row */
    int *slot; /* (n) request i's point in its row */
    long n;
} attr_adaptive;

/* Quadrature weights of piece p's points (a, m, b) for the row's sum. */
static void piece_weights(const attr_piece *p, const double *alpha, double w[3])
{
    double h = alpha[p->b] - alpha[p->a];
    if (p->rule == PIECE_SIMPSON) w[0] = h / 6.0, w[1] = 4.0 * h / 6.0, w[2] = h / 6.0;
    else if (p->rule == PIECE_OPEN) w[0] = 0.0, w[1] = h, w[2] = 0.0;
    else w[0] = h / 2.0, w[1] = 0.0, w[2] = h / 2.0;
}

/* Piece p's residual: its quadrature of the row's sum less the change of f over it, which the
 * sum of the attributions would equal if the rule were exact (completeness on [a, b]). */
static double piece_residual(const attr_adaptive *ad, int j, const attr_piece *p)
{
    size_t row = (size_t)j * ad->points;
    const double *alpha = ad->alpha + row, *f = ad->logp + row, *sum = ad->sum + row;
    double w[3];
    piece_weights(p, alpha, w);
    double quad = w[0] * sum[p->a] + w[2] * sum[p->b] + (p->m >= 0 ? w[1] * sum[p->m] : 0.0);
    return quad - (f[p->b] - f[p->a]);
}

/* A new evaluation of row j at alpha, requested for this round: its point in the row. */
static int add_eval(attr_adaptive *ad, int j, double alpha)
{
    int k = ad->used[j]++;
    ad->alpha[(size_t)j * ad->points + k] = alpha;
    ad->slot[ad->n] = k;
    ad->ev[ad->n++] = (attr_eval){j, (float)alpha};
    return k;
}

typedef struct {
    double residual;
    int piece;
} attr_ranked;

static int by_residual(const void *x, const void *y)
{
    const attr_ranked *a = x, *b = y;
    if (a->residual != b->residual) return a->residual < b->residual ? 1 : -1;
    return a->piece - b->piece;
}

/* Row j's next round: its pieces with the largest |residual| split at their midpoint, each half
 * with a new midpoint (2 evaluations; the first half of the piece at 0 stays open; with one
 * evaluation left the second half takes the trapezoid rule; a trapezoid piece gets its
 * midpoint), requests added to the round's. */
static void split_pieces(attr_adaptive *ad, int j, attr_ranked *ranked)
{
    attr_piece *pieces = ad->pieces + (size_t)j * ad->points;
    const double *alpha = ad->alpha + (size_t)j * ad->points;
    int count = ad->n_pieces[j];
    for (int p = 0; p < count; p++)
        ranked[p] = (attr_ranked){fabs(piece_residual(ad, j, &pieces[p])), p};
    qsort(ranked, (size_t)count, sizeof *ranked, by_residual);
    int splits = count / ADAPTIVE_SPLIT_SHARE > 1 ? count / ADAPTIVE_SPLIT_SHARE : 1;
    for (int s = 0; s < splits && ad->used[j] < ad->points; s++) {
        attr_piece *p = &pieces[ranked[s].piece];
        if (p->rule == PIECE_TRAPEZOID) {
            p->m = add_eval(ad, j, (alpha[p->a] + alpha[p->b]) / 2.0);
            p->rule = PIECE_SIMPSON;
            continue;
        }
        attr_piece right = {p->m, -1, p->b, PIECE_TRAPEZOID};
        int left_mid = add_eval(ad, j, (alpha[p->a] + alpha[p->m]) / 2.0);
        if (ad->used[j] < ad->points) {
            right.m = add_eval(ad, j, (alpha[p->m] + alpha[p->b]) / 2.0);
            right.rule = PIECE_SIMPSON;
        }
        *p = (attr_piece){p->a, left_mid, p->m, p->rule};
        pieces[ad->n_pieces[j]++] = right;
    }
}

/* Integrated gradients with the adaptive rule (attribution_rules.h, docs/attribution.md §2):
 * every row starts from ADAPTIVE_FIRST_PIECES pieces and, round by round, splits the pieces
 * whose quadrature of the row's sum is furthest from the change of the log-prob over them (both
 * known from the passes already run, f(0) from the baseline's: no extra pass) until it has used
 * steps evaluations; the rows' requests of a round run together, in order of row. The composite
 * rule's weights then sum each evaluation's scores into acc (rows, cols). logp0 (rows) the rows'
 * log-probs at the baseline. Needs steps >= 2. */
int attr_integrate_adaptive(const attr_evaluator *ev, int steps, const double *logp0, double *acc)
{
    int rows = ev->rows, cols = ev->cols, points = steps + 1;
    size_t all = (size_t)rows * points;
    attr_adaptive ad = {.points = points, .cols = cols};
    ad.alpha = mt_xcalloc(all, sizeof *ad.alpha);
    ad.logp = mt_xcalloc(all, sizeof *ad.logp);
    ad.sum = mt_xcalloc(all, sizeof *ad.sum);
    ad.scores = mt_xcalloc(all * cols, sizeof *ad.scores);
    ad.pieces = mt_xmalloc(all * sizeof *ad.pieces);
    ad.n_pieces = mt_xcalloc((size_t)rows, sizeof *ad.n_pieces);
    ad.used = mt_xcalloc((size_t)rows, sizeof *ad.used);
    ad.ev = mt_xmalloc(all * sizeof *ad.ev);
    ad.slot = mt_xmalloc(all * sizeof *ad.slot);
    attr_ranked *ranked = mt_xmalloc(all * sizeof *ranked);
    int first = steps / 2 < ADAPTIVE_FIRST_PIECES ? steps / 2 : ADAPTIVE_FIRST_PIECES;
    for (int j = 0; j < rows; j++) {
        ad.logp[(size_t)j * points] = logp0[j];
        ad.used[j] = 1;
        for (int k = 1; k <= 2 * first; k++) add_eval(&ad, j, (double)k / (2 * first));
        for (int p = 0; p < first; p++)
            ad.pieces[(size_t)j * points + p] =
                (attr_piece){2 * p, 2 * p + 1, 2 * p + 2, p ? PIECE_SIMPSON : PIECE_OPEN};
        ad.n_pieces[j] = first;
    }
    int rc = 0;
    while (ad.n > 0 && rc == 0) {
        long n = ad.n;
        double *scores = mt_xcalloc((size_t)n * cols, sizeof *scores);
        double *logp = mt_xmalloc((size_t)n * sizeof *logp);
        rc = ev->evaluate(ev->ctx, ad.ev, n, &(attr_sink){NULL, scores, logp});
        for (long i = 0; i < n && rc == 0; i++) {
            size_t at = (size_t)ad.ev[i].j * points + ad.slot[i];
            const double *row = scores + (size_t)i * cols;
            double s = 0.0;
            for (int c = 0; c < cols; c++) s += row[c];
            memcpy(ad.scores + at * cols, row, (size_t)cols * sizeof *row);
            ad.logp[at] = logp[i];
            ad.sum[at] = s;
        }
        free(scores);
        free(logp);
        ad.n = 0;
        for (int j = 0; j < rows && rc == 0; j++)
            if (ad.used[j] < points) split_pieces(&ad, j, ranked);
    }
    /* the composite rule's weight of each point, then the weighted sum of its scores */
    double *w = mt_xmalloc((size_t)points * sizeof *w);
    for (int j = 0; j < rows && rc == 0; j++) {
        const double *alpha = ad.alpha + (size_t)j * points;
        memset(w, 0, (size_t)points * sizeof *w);
        for (int p = 0; p < ad.n_pieces[j]; p++) {
            const attr_piece *pc = &ad.pieces[(size_t)j * points + p];
            double pw[3];
            piece_weights(pc, alpha, pw);
            w[pc->a] += pw[0];
            w[pc->b] += pw[2];
            if (pc->m >= 0) w[pc->m] += pw[1];
        }
        double *out = acc + (size_t)j * cols;
        for (int k = 1; k < points; k++) {
            const double *sc = ad.scores + ((size_t)j * points + k) * cols;
            for (int c = 0; c < cols; c++) out[c] += w[k] * sc[c];
        }
    }
    free(w);
    free(ad.alpha);
    free(ad.logp);
    free(ad.sum);
    free(ad.scores);
    free(ad.pieces);
    free(ad.n_pieces);
    free(ad.used);
    free(ad.ev);
    free(ad.slot);
    free(ranked);
    return rc;
}
