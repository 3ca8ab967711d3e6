/* The CUDA backend's sequence operations against the CPU backend (the reference): attention
 * (causal, windowed, masked, over a KV cache, single queries), retention and its recurrent
 * step, the causal conv1d and its decoding step, and the selective scan (both CUDA kernels,
 * forward, backward and step), at shapes including B = 1, T = 1 and lengths that are not a
 * multiple of any tile. The buffers, seed and bounds: cuda_pairs.h; the other operations:
 * test_cuda_ops.c. */
#include "cuda_pairs.h"

/* ---------------------------------------------------------------- attention */
typedef struct {
    int B, H, Tq, Tk, Dh, causal, window, masked, cache;
} attn_case;

static void attention_case(const attn_case *c, double tol)
{
    int C = c->H * c->Dh, Tmax = c->cache ? c->Tk + 5 : c->Tk;
    mt_attn_desc d = {.B = c->B,
                      .H = c->H,
                      .Tq = c->Tq,
                      .Tk = c->Tk,
                      .Dh = c->Dh,
                      .kv_bstride = (size_t)Tmax * C,
                      .causal = c->causal,
                      .q_pos0 = c->causal ? c->Tk - c->Tq : 0,
                      .window = c->window,
                      .mask_bstride = (size_t)Tmax,
                      .scale = 1.0f / sqrtf((float)c->Dh)};
    size_t nq = (size_t)c->B * c->Tq * C, nk = (size_t)c->B * Tmax * C;
    size_t na = (size_t)c->B * c->H * c->Tq * c->Tk;
    pair q = rnd(nq, 1.5f), k = rnd(nk, 1.5f), v = rnd(nk, 1.0f), out = poison(nq),
         att = poison(na);
    mpair m = mask((size_t)c->B * Tmax);
    mt_attn_desc dh = d, dd = d;
    dh.key_mask = c->masked ? m.h : NULL;
    dd.key_mask = c->masked ? m.d : NULL;
    cpu->attention_forward(out.h, att.h, q.h, k.h, v.h, &dh);
    gpu->attention_forward(out.d, att.d, q.d, k.d, v.d, &dd);
    double e = fmax(diff(out), diff(att));
    /* without probabilities (the decoding path) */
    pair out2 = poison(nq);
    cpu->attention_forward(out2.h, NULL, q.h, k.h, v.h, &dh);
    gpu->attention_forward(out2.d, NULL, q.d, k.d, v.d, &dd);
    e = fmax(e, diff(out2));
    pair dout = rnd(nq, 1.0f), dq = rnd(nq, 1.0f), dk = rnd(nk, 1.0f), dv = rnd(nk, 1.0f),
         datt = poison(na);
    cpu->attention_backward(dq.h, dk.h, dv.h, datt.h, dout.h, q.h, k.h, v.h, att.h, &dh);
    gpu->attention_backward(dq.d, dk.d, dv.d, datt.d, dout.d, q.d, k.d, v.d, att.d, &dd);
    e = fmax(e, fmax(diff(dq), fmax(diff(dk), diff(dv))));
    char what[120];
    snprintf(what, sizeof what, "attention B%d H%d Tq%d Tk%d Dh%d%s%s%s%s%s", c->B, c->H, c->Tq,
             c->Tk, c->Dh, c->causal ? " causal" : "", c->window ? " window" : "",
             c->masked ? " masked" : "", c->cache ? " cache" : "",
             tol == TOL_BF16 ? " bf16 products" : "");
    report(what, e, tol);
    drop(q), drop(k), drop(v), drop(out), drop(att), drop(out2), drop(dout), drop(dq), drop(dk),
        drop(dv);
    drop(datt), mdrop(m);
}

static void test_attention(void **state)
{
    NEED_GPU();
    const attn_case cases[] = {
        {1, 1, 1, 1, 1, 0, 0, 0, 0},
        {2, 3, 7, 7, 8, 1, 0, 1, 0},
        {2, 2, 33, 33, 16, 1, 4, 0, 0},
        {3, 2, 5, 19, 32, 0, 0, 1, 0},
        {2, 4, 1, 70, 64, 1, 0, 1, 1},
        {1, 8, 1, 130, 64, 1, 64, 0, 1},
        {2, 2, 129, 129, 64, 1, 0, 1, 0},
        {1, 2, 3, 200, 128, 1, 0, 0, 1},
        /* one query (decoding; out2 takes the split-key kernel): 4 chunks of 256 keys at Table
         * 4's shape, 47 chunks of 64, cross-attention over a masked source with Dh 5, Dh 200
         * with a window that leaves whole chunks invisible, Dh 300 (the tiled kernel) */
        {16, 16, 1, 1024, 128, 1, 0, 1, 1},
        {1, 2, 1, 3000, 64, 1, 0, 0, 1},
        {3, 2, 1, 500, 5, 0, 0, 1, 0},
        {2, 3, 1, 300, 200, 1, 40, 0, 1},
        {1, 1, 1, 70, 300, 1, 0, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) attention_case(&cases[i], TOL_FP32);
    /* the backward's products in the bf16 mode (one pointer-array batch over rows and heads) */
    if (!(gpu = cuda_or_skip(1))) return;
    const attn_case wide = {5, 3, 21, 40, 48, 0, 0, 1, 1};
    const attn_case odd = {3, 2, 9, 11, 5, 1, 0, 1, 0}; /* heads 10 bytes apart in bf16 */
    attention_case(&wide, TOL_BF16);
    attention_case(&odd, TOL_BF16);
    attention_case(&cases[6], TOL_BF16);
    gpu = cuda_or_skip(0);
}

/* ---------------------------------------------------------------- retention */
static void test_retention(void **state)
{
    NEED_GPU();
    const int shapes[][5] = {
        {1, 1, 1, 1, 1}, {2, 2, 9, 8, 16}, {1, 4, 67, 16, 32}, {3, 3, 130, 8, 8}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int B = shapes[s][0], H = shapes[s][1], T = shapes[s][2], Dk = shapes[s][3],
            Dv = shapes[s][4];
        float gamma[MT_RETENTION_MAX_HEADS];
        for (int h = 0; h < H; h++) gamma[h] = 1.0f - powf(2.0f, -5.0f - (float)h);
        mpair m = mask((size_t)B * T);
        for (int b = 0; b < B; b++) m.h[(size_t)b * T + T - 1] = 1; /* a real last token */
        gpu->upload(m.d, m.h, m.n);
        mt_retention_desc dh = {
            .B = B, .H = H, .T = T, .Dk = Dk, .Dv = Dv, .gamma = gamma, .key_mask = m.h};
        mt_retention_desc dd = dh;
        dd.key_mask = m.d;
        size_t nq = (size_t)B * T * H * Dk, nv = (size_t)B * T * H * Dv, na = (size_t)B * H * T * T;
        pair q = rnd(nq, 1.0f), k = rnd(nq, 1.0f), v = rnd(nv, 1.0f), out = poison(nv),
             att = poison(na);
        pair r = poison((size_t)B * H * T);
        cpu->retention_forward(out.h, att.h, r.h, q.h, k.h, v.h, &dh);
        gpu->retention_forward(out.d, att.d, r.d, q.d, k.d, v.d, &dd);
        double e = fmax(diff(out), fmax(diff(att), diff(r)));
        pair dout = rnd(nv, 1.0f), dq = rnd(nq, 1.0f), dk = rnd(nq, 1.0f), dv = rnd(nv, 1.0f),
             datt = poison(na);
        cpu->retention_backward(dq.h, dk.h, dv.h, datt.h, dout.h, q.h, k.h, v.h, att.h, r.h, &dh);
        gpu->retention_backward(dq.d, dk.d, dv.d, datt.d, dout.d, q.d, k.d, v.d, att.d, r.d, &dd);
        e = fmax(e, fmax(diff(dq), fmax(diff(dk), diff(dv))));
        /* recurrent form: the state after all T positions, then one more step */
        size_t nkv = (size_t)B * H * Dk * Dv;
        pair kv = poison(nkv), st = poison((size_t)B * H);
        mt_retention_desc fh = dh, fd = dd;
        cpu->retention_state_fill(kv.h, st.h, k.h, v.h, &fh);
        gpu->retention_state_fill(kv.d, st.d, k.d, v.d, &fd);
        e = fmax(e, fmax(diff(kv), diff(st)));
        mt_retention_desc sh = {.B = B, .H = H, .T = 1, .Dk = Dk, .Dv = Dv, .gamma = gamma};
        pair q1 = rnd((size_t)B * H * Dk, 1.0f), k1 = rnd((size_t)B * H * Dk, 1.0f);
        pair v1 = rnd((size_t)B * H * Dv, 1.0f), o1 = poison((size_t)B * H * Dv);
        cpu->retention_step(o1.h, kv.h, st.h, q1.h, k1.h, v1.h, &sh);
        gpu->retention_step(o1.d, kv.d, st.d, q1.d, k1.d, v1.d, &sh);
        e = fmax(e, fmax(diff(o1), fmax(diff(kv), diff(st))));
        char what[96];
        snprintf(what, sizeof what, "retention B%d H%d T%d Dk%d Dv%d parallel/backward/recurrent",
                 B, H, T, Dk, Dv);
        report(what, e, TOL_FP32);
        drop(q), drop(k), drop(v), drop(out), drop(att), drop(r), drop(dout), drop(dq), drop(dk),
            drop(dv);
        drop(datt), drop(kv), drop(st), drop(q1), drop(k1), drop(v1), drop(o1), mdrop(m);
    }
}

/* ---------------------------------------------------------------- conv1d and the selective scan */
static void test_conv1d(void **state)
{
    NEED_GPU();
    const int shapes[][4] = {{1, 1, 1, 4}, {2, 9, 13, 4}, {3, 130, 256, 4}, {1, 3, 5, 7}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int B = shapes[s][0], T = shapes[s][1], C = shapes[s][2], K = shapes[s][3];
        size_t n = (size_t)B * T * C;
        pair x = rnd(n, 1.0f), w = rnd((size_t)C * K, 1.0f), b = rnd((size_t)C, 1.0f),
             out = poison(n);
        cpu->conv1d_forward(out.h, x.h, w.h, b.h, B, T, C, K),
            gpu->conv1d_forward(out.d, x.d, w.d, b.d, B, T, C, K);
        double e = diff(out);
        cpu->conv1d_forward(out.h, x.h, w.h, NULL, B, T, C, K),
            gpu->conv1d_forward(out.d, x.d, w.d, NULL, B, T, C, K);
        e = fmax(e, diff(out));
        pair dout = rnd(n, 1.0f), dx = rnd(n, 1.0f), dw = rnd((size_t)C * K, 1.0f),
             db = rnd((size_t)C, 1.0f);
        cpu->conv1d_backward(dx.h, dw.h, db.h, dout.h, x.h, w.h, B, T, C, K);
        gpu->conv1d_backward(dx.d, dw.d, db.d, dout.d, x.d, w.d, B, T, C, K);
        e = fmax(e, fmax(diff(dx), fmax(diff(dw), diff(db))));
        pair state_ = poison((size_t)B * C * K), x1 = rnd((size_t)B * C, 1.0f),
             o1 = poison((size_t)B * C);
        cpu->conv1d_state_fill(state_.h, x.h, B, T, C, K),
            gpu->conv1d_state_fill(state_.d, x.d, B, T, C, K);
        e = fmax(e, diff(state_));
        cpu->conv1d_step(o1.h, state_.h, x1.h, w.h, b.h, B, C, K);
        gpu->conv1d_step(o1.d, state_.d, x1.d, w.d, b.d, B, C, K);
        e = fmax(e, fmax(diff(o1), diff(state_)));
        /* the next step with its SiLU in the same kernel (conv1d_step_silu): against the CPU's
         * two operations, and bit for bit against the GPU's two from a copy of the state */
        const size_t bc = (size_t)B * C, nst = bc * K;
        pair x2 = rnd(bc, 1.0f), o2 = poison(bc), u2 = poison(bc), o3 = poison(bc), u3 = poison(bc);
        float *st3 = gpu->alloc(nst * sizeof *st3);
        assert_non_null(st3);
        gpu->copy(st3, state_.d, nst * sizeof *st3);
        cpu->conv1d_step(o2.h, state_.h, x2.h, w.h, b.h, B, C, K);
        cpu->act_forward(MT_ACT_SILU, u2.h, o2.h, bc);
        assert_non_null(gpu->conv1d_step_silu);
        gpu->conv1d_step_silu(o2.d, u2.d, state_.d, x2.d, w.d, b.d, B, C, K);
        e = fmax(e, fmax(diff(o2), fmax(diff(u2), diff(state_))));
        gpu->conv1d_step(o3.d, st3, x2.d, w.d, b.d, B, C, K);
        gpu->act_forward(MT_ACT_SILU, u3.d, o3.d, bc);
        if (!same_bits(o2.d, o3.d, bc) || !same_bits(u2.d, u3.d, bc) ||
            !same_bits(state_.d, st3, nst))
            fail_msg("conv1d_step_silu B%d C%d K%d: other bits than conv1d_step and SiLU", B, C, K);
        gpu->free(st3);
        char what[96];
        snprintf(what, sizeof what, "conv1d B%d T%d C%d K%d forward/backward/state/step(+SiLU)", B,
                 T, C, K);
        report(what, e, TOL_FP32);
        drop(x), drop(w), drop(b), drop(out), drop(dout), drop(dx), drop(dw), drop(db),
            drop(state_), drop(x1), drop(o1), drop(x2), drop(o2), drop(u2), drop(o3), drop(u3);
    }
}

/* One scan case on the kernel MTLAB_CUDA_SCAN names (kernels/cuda_scan.cu; unset: the parallel
 * one where it takes the shape): forward with and without h0 and h_last, backward with every
 * gradient and with only du, ddt, then a step from the final state and one more with its gate.
 * Returns the largest relative error. */
static double scan_case(int B, int T, int D, int N)
{
    size_t nu = (size_t)B * T * D, nb = (size_t)B * T * N, nh = (size_t)B * D * N;
    pair u = rnd(nu, 1.0f), dt = rnd(nu, 2.0f), A_log = rnd((size_t)D * N, 1.0f),
         Bm = rnd(nb, 1.0f);
    pair Cm = rnd(nb, 1.0f), Ds = rnd((size_t)D, 1.0f), dtb = rnd((size_t)D, 1.0f);
    mt_scan_args ah = {u.h, dt.h, A_log.h, Bm.h, Cm.h, Ds.h, dtb.h, B, T, D, N, NULL, NULL};
    mt_scan_args ad = {u.d, dt.d, A_log.d, Bm.d, Cm.d, Ds.d, dtb.d, B, T, D, N, NULL, NULL};
    pair y = poison(nu), hl = poison(nh);
    cpu->scan_forward(y.h, hl.h, &ah), gpu->scan_forward(y.d, hl.d, &ad);
    double e = fmax(diff(y), diff(hl));
    /* from a given state (a prefill in chunks), with and without h_last */
    pair h0 = rnd(nh, 1.0f), y0 = poison(nu), hl0 = poison(nh);
    mt_scan_args ah0 = ah, ad0 = ad;
    ah0.h0 = h0.h, ad0.h0 = h0.d;
    cpu->scan_forward(y0.h, hl0.h, &ah0), gpu->scan_forward(y0.d, hl0.d, &ad0);
    e = fmax(e, fmax(diff(y0), diff(hl0)));
    cpu->scan_forward(y0.h, NULL, &ah0), gpu->scan_forward(y0.d, NULL, &ad0);
    e = fmax(e, diff(y0));
    pair dy = rnd(nu, 1.0f), du = rnd(nu, 1.0f), ddt = rnd(nu, 1.0f), dA = rnd((size_t)D * N, 1.0f);
    pair dB = rnd(nb, 1.0f), dC = rnd(nb, 1.0f), dD = rnd((size_t)D, 1.0f),
         ddb = rnd((size_t)D, 1.0f);
    mt_scan_grads gh = {du.h, ddt.h, dA.h, dB.h, dC.h, dD.h, ddb.h};
    mt_scan_grads gd = {du.d, ddt.d, dA.d, dB.d, dC.d, dD.d, ddb.d};
    cpu->scan_backward(&gh, dy.h, &ah), gpu->scan_backward(&gd, dy.d, &ad);
    e = fmax(e, fmax(fmax(diff(du), diff(ddt)), fmax(diff(dA), diff(dB))));
    e = fmax(e, fmax(diff(dC), fmax(diff(dD), diff(ddb))));
    /* optional gradients left out; h0 is the forward's only, which backward ignores */
    mt_scan_grads gh2 = {du.h, ddt.h, NULL, NULL, NULL, NULL, NULL};
    mt_scan_grads gd2 = {du.d, ddt.d, NULL, NULL, NULL, NULL, NULL};
    cpu->scan_backward(&gh2, dy.h, &ah0), gpu->scan_backward(&gd2, dy.d, &ad0);
    e = fmax(e, fmax(diff(du), diff(ddt)));
    /* one recurrent step from the final state */
    mt_scan_args sh = ah, sd = ad;
    sh.T = sd.T = 1;
    pair y1 = poison((size_t)B * D);
    cpu->scan_step(y1.h, hl.h, &sh), gpu->scan_step(y1.d, hl.d, &sd);
    e = fmax(e, fmax(diff(y1), diff(hl)));
    /* the next step with its gate in the same kernel (scan_step_gate): against the CPU's two
     * operations, and bit for bit against the GPU's two from a copy of the state */
    const size_t bd = (size_t)B * D;
    pair z = rnd(bd, 2.0f), y2 = poison(bd), yg2 = poison(bd), y3 = poison(bd), yg3 = poison(bd);
    float *h3 = gpu->alloc(nh * sizeof *h3);
    assert_non_null(h3);
    gpu->copy(h3, hl.d, nh * sizeof *h3);
    cpu->scan_step(y2.h, hl.h, &sh), cpu->gate_forward(yg2.h, y2.h, z.h, bd);
    assert_non_null(gpu->scan_step_gate);
    gpu->scan_step_gate(y2.d, yg2.d, hl.d, z.d, &sd);
    e = fmax(e, fmax(diff(y2), fmax(diff(yg2), diff(hl))));
    gpu->scan_step(y3.d, h3, &sd), gpu->gate_forward(yg3.d, y3.d, z.d, bd);
    if (!same_bits(y2.d, y3.d, bd) || !same_bits(yg2.d, yg3.d, bd) || !same_bits(hl.d, h3, nh))
        fail_msg("scan_step_gate B%d D%d N%d: other bits than scan_step and the gate", B, D, N);
    gpu->free(h3);
    drop(z), drop(y2), drop(yg2), drop(y3), drop(yg3);
    drop(u), drop(dt), drop(A_log), drop(Bm), drop(Cm), drop(Ds), drop(dtb), drop(y), drop(hl),
        drop(dy);
    drop(du), drop(ddt), drop(dA), drop(dB), drop(dC), drop(dD), drop(ddb), drop(y1), drop(h0),
        drop(y0), drop(hl0);
    return e;
}

/* Every case on both kernels: the parallel one (chunks of 64 steps in 8 segments, states in
 * groups of 16 forward and 8 backward, blocks of 32 channels, N up to 64) and the sequential
 * reference. The long cases cross chunks, end inside a segment or a chunk (T 1000, 300, 65),
 * leave lanes past D (17, 33, 96) and states past a group (N 1, 40); N 100 is beyond the
 * parallel kernel and takes the sequential one under both names. */
static void test_scan(void **state)
{
    NEED_GPU();
    const int shapes[][4] = {
        {1, 1, 1, 1},      {2, 7, 5, 4},      {2, 65, 64, 16},  {1, 300, 96, 16}, {3, 33, 17, 40},
        {1, 2048, 64, 16}, {3, 1000, 33, 16}, {2, 1000, 40, 1}, {3, 200, 70, 40}, {1, 70, 9, 100}};
    const char *kernels[] = {"parallel", "sequential"};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int k = 0; k < 2; k++) {
            int B = shapes[s][0], T = shapes[s][1], D = shapes[s][2], N = shapes[s][3];
            if (k) setenv("MTLAB_CUDA_SCAN", "sequential", 1);
            double e = scan_case(B, T, D, N);
            unsetenv("MTLAB_CUDA_SCAN");
            char what[96];
            snprintf(what, sizeof what, "selective scan B%d T%d D%d N%d %s", B, T, D, N,
                     kernels[k]);
            report(what, e, TOL_FP32);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_conv1d),
        cmocka_unit_test(test_scan),
    };
    return cmocka_run_group_tests_name("cuda_seq_ops", tests, cuda_pairs_setup, NULL);
}
