/* The lane kernel's body: nuclear norms of many small float64 matrices, one matrix per SIMD lane.
 *
 * Included once per instruction set by _lanes.c, with LANES_NAME(x) naming the functions of that copy and the
 * compiler's target set by a pragma around the include, so that one build carries an AVX-512, an AVX2 and a
 * portable copy and _lanes.c picks one at run time. Nothing here is specific to an instruction set: the inner
 * loops run over lanes (the last, contiguous index of every workspace array), and the compiler turns each of them
 * into vector instructions of the width the target has. Every branch that differs between lanes is written as a
 * select between two computed values, so that the loops stay straight-line code.
 *
 * For each group of matrices (_lanes_bidiag.h): scale each by a power of two (exact) so its largest entry lies in
 * [0.5, 1), and reduce it to an upper bidiagonal matrix by Householder reflections. For each chunk of QW such
 * bidiagonals: implicit QR sweeps on the bidiagonal, as LAPACK's dbdsqr runs them (Demmel and Kahan 1990), each
 * lane on its own unreduced bottom block, until every off-diagonal entry is below eps times the lane's largest
 * entry. A sweep is shifted (Golub and Kahan 1965), or zero-shift (Demmel and Kahan) where dbdsqr takes the zero
 * shift: that is what deflates a zero or negligible diagonal entry. The sum of the absolute diagonal is the
 * nuclear norm; a lane that has not converged within max_sweeps sweeps is flagged, and the caller takes that
 * matrix's singular values from LAPACK instead.
 */

#define LANES_MAX(a, b) ((a) > (b) ? (a) : (b))
#define LANES_MIN(a, b) ((a) < (b) ? (a) : (b))

/* The packing and bidiagonalisation, once per group width (see _lanes_bidiag.h). */
#define LANES_WPASTE(name, w) name##_w##w
#define LANES_WNAME_(name, w) LANES_WPASTE(name, w)
#define LANES_WNAME(x) LANES_WNAME_(LANES_NAME(x), LANES_W)
#define LANES_W 8
#define LANES_V lanes_v8
#include "_lanes_bidiag.h"
#undef LANES_W
#undef LANES_V
#define LANES_W 4
#define LANES_V lanes_v4
#include "_lanes_bidiag.h"
#undef LANES_W
#undef LANES_V
#define LANES_W 2
#define LANES_V lanes_v2
#include "_lanes_bidiag.h"
#undef LANES_W
#undef LANES_V
#define LANES_W 1
#define LANES_V double
#include "_lanes_bidiag.h"
#undef LANES_W
#undef LANES_V
#undef LANES_WNAME
#define LANES_PACK(w) LANES_WNAME_(LANES_NAME(pack_and_bidiagonalize), w)

static inline __attribute__((always_inline)) void LANES_NAME(sweep)(
    double *D, double *E, int kmin, int kmax, const double *lo, const double *hi, const double *zero,
    const double *f0, const double *g0, double *f, double *g, double *osn, const int with_zero_shift) {
    /* One sweep over the union kmin .. kmax of the lanes' blocks, from the top of each lane's block to its
     * bottom; a lane outside its block at step k keeps its entries. Row k of either sweep takes two rotations:
     * the first from (f, g) (shifted) or from (d_k cs, e_k) (zero shift), the second from (the first's output,
     * s d_{k+1}); they are computed once, and each sweep's own updates are selected per lane (dbdsqr's loops 140
     * and 120). What a lane carries from row to row: the shifted sweep's bulge (f, g), or the zero-shift sweep's
     * cosines (cs, ocs, kept in f and g) and sine osn of the previous row's two rotations; f0, g0 start them.
     * with_zero_shift = 0 (a constant: this function is inlined twice) compiles the shifted sweep alone. */
    for (int k = kmin; k <= kmax; k++) {
        const double kk = k;
        double *Dk = D + (size_t)k * QW, *Dk1 = Dk + QW;
        double *Ek = E + (size_t)k * QW, *Ekm1 = Ek - QW, *Ek1 = Ek + QW;
#pragma GCC ivdep
        for (int l = 0; l < QW; l++) {
            int act = (lo[l] <= kk) & (kk <= hi[l] - 2.0), z = with_zero_shift && zero[l] != 0.0;
            int start = kk == lo[l], rotated = act & (kk != lo[l]);
            int shifted = act & !z, closing = act & z & (kk == hi[l] - 2.0);
            double dk = Dk[l], ek = Ek[l], dk1 = Dk1[l], ek1 = Ek1[l], ekm1 = Ekm1[l];
            double fs = start ? f0[l] : f[l], gs = start ? g0[l] : g[l];
            double x = z ? dk * fs : fs, y = z ? ek : gs;
            double r = sqrt(x * x + y * y);
            int nz = r > 0.0;
            double ir = 1.0 / (nz ? r : 1.0);
            double c = nz ? x * ir : 1.0, s = nz ? y * ir : 0.0;
            double f1 = c * dk + s * ek, et = c * ek - s * dk, g1 = s * dk1, dt = c * dk1;
            double x2 = z ? gs * r : f1;
            double r2 = sqrt(x2 * x2 + g1 * g1);
            int nz2 = r2 > 0.0;
            double ir2 = 1.0 / (nz2 ? r2 : 1.0);
            double c2 = nz2 ? x2 * ir2 : 1.0, s2 = nz2 ? g1 * ir2 : 0.0;
            double f2 = c2 * et + s2 * dt, d1 = c2 * dt - s2 * et, g2 = s2 * ek1, e1 = c2 * ek1;
            double last = dk1 * c; /* zero shift, the block's last row: d = last c2, and e above it last s2 */
            Ekm1[l] = rotated ? (z ? osn[l] * r : r) : ekm1;
            Dk[l] = act ? r2 : dk;
            Dk1[l] = shifted ? d1 : closing ? last * c2 : dk1;
            Ek[l] = shifted ? f2 : closing ? last * s2 : ek;
            Ek1[l] = shifted ? e1 : ek1;
            f[l] = act ? (z ? c : f2) : f[l];
            g[l] = act ? (z ? c2 : g2) : g[l];
            if (with_zero_shift) osn[l] = act ? s2 : osn[l];
        }
    }
}

static void LANES_NAME(bidiagonal_sweeps)(double *D, double *E, int n, int max_sweeps, unsigned char *failed) {
    /* D: (n, QW) diagonal; E: (n + 2, QW) superdiagonal with a zero row before (E[-1]) and after (E[n - 1], E[n]).
     * On return D holds each lane's singular values (up to sign); failed[l] = 1 for a lane that did not converge.
     * Each lane works on its bottom unreduced block, rows lo .. hi-1; the bookkeeping (deflation, the block's
     * top, the shift) is itself done for all lanes at once, with indices kept as doubles so that every loop
     * runs on vectors of one width.
     *
     * Convergence. An off-diagonal entry at most thr = eps * (the lane's largest entry) is negligible: it is
     * left in place and the block ends above it (its rotation by the next sweep only shrinks it, and the bulge
     * it would create, as small, is dropped). This is dbdsqr's test for absolute accuracy (its TOL < 0) with
     * |TOL| = 2 eps (DBL_EPSILON): it changes each singular value by at most thr, the round-off of the sum
     * itself, which is all a nuclear norm needs; dbdsqr's default, relative test would spend sweeps on singular
     * values that do not move the sum.
     *
     * The shift is dbdsqr's: the smaller singular value of the block's trailing 2 x 2 (LAPACK dlas2), replaced
     * by zero, as dbdsqr replaces it, when it is negligible against the block's first diagonal entry,
     * (shift / d_lo)^2 < eps, and when the block's smallest singular value is negligible against its largest
     * entry smax. For that, dbdsqr's estimate of the smallest singular value: smin = min_k mu_k over the block,
     * mu_k = |d_k| mu_{k+1} / (mu_{k+1} + |e_k|) (Demmel and Kahan 1990; run here from the bottom up, which is the
     * same estimate for the reversed bidiagonal, with the same singular values). dbdsqr, which aims at relative
     * accuracy, takes the zero shift as soon as smin <= about 0.01 smax / n; aiming at absolute accuracy, the kernel
     * takes it where a shifted sweep cannot see the smallest singular value at all, (smin / smax)^2 < eps: a shifted
     * sweep is a QR step on B^T B, and below that sigma_min^2 is lost in the round-off of its entries. (On the
     * engine's cross matrices dbdsqr's bound costs about 15 % more sweeps, zero-shift sweeps converging only
     * linearly, for singular values the sum does not need more accurately.)
     *
     * Why a zero or negligible diagonal entry needs the zero shift. If d_k = 0 inside the block, B^T B has a
     * zero off-diagonal entry d_k e_k: it splits, while B does not. A shifted sweep is a QR step on B^T B only
     * while B^T B is unreduced; here its bulge dies at row k, rows below k never see the shift, and the
     * bottom of the block does not converge (1e-300 in place of the zero behaves the same to within round-
     * off). A zero diagonal entry makes smin = 0 (mu_k = 0 onwards), so the zero shift is taken, and Demmel
     * and Kahan's zero-shift sweep chases the zero out: its rotations start from (d_k cs, e_k), and d_k = 0
     * gives cs = 0 at row k and at every row below it, so the sweep shifts the rows below up by one and leaves
     * d = 0 and e = 0 in the block's last row, which deflates (d_k = 1e-300 leaves entries of that size, below
     * thr). LAPACK's dbdsqr has no other step for a zero diagonal entry; this sweep is its deflation. */
    const double eps = DBL_EPSILON / 2, sqrt_eps = sqrt(eps); /* LAPACK's eps: the unit round-off, 2^-53 */
    double thr[QW], lo[QW], hi[QW], sweeps[QW], bad[QW], mu[QW], smin[QW], smax[QW];
    /* zero[l]: this lane's sweep is zero-shift; f0, g0, f, g, osn: what its sweep carries (see sweep). */
    double f0[QW], g0[QW], f[QW], g[QW], osn[QW], zero[QW];
    for (int l = 0; l < QW; l++) thr[l] = 0.0;
    for (int k = 0; k < n; k++)
        for (int l = 0; l < QW; l++) {
            double a = fabs(D[(size_t)k * QW + l]), b = fabs(E[(size_t)k * QW + l]);
            thr[l] = LANES_MAX(thr[l], LANES_MAX(a, b));
        }
    for (int l = 0; l < QW; l++) {
        thr[l] *= DBL_EPSILON;
        hi[l] = n;
        sweeps[l] = bad[l] = f[l] = g[l] = osn[l] = 0.0;
    }
    const double cap = max_sweeps;
    for (;;) {
        /* Deflate: the block ends above a negligible E[hi-2], as often as there is one. */
        for (int any = 1; any;) {
            any = 0;
            for (int l = 0; l < QW; l++) {
                double h = hi[l];
                long ih = h >= 2.0 ? (long)h - 2 : -1;
                int deflate = (h > 1.0) & (fabs(E[ih * QW + l]) <= thr[l]);
                hi[l] = deflate ? h - 1.0 : h;
                any |= deflate;
            }
        }
        double kmax = -1.0;
        for (int l = 0; l < QW; l++) {
            int live = hi[l] > 1.0, over = live & (sweeps[l] >= cap);
            bad[l] = over ? 1.0 : bad[l];
            hi[l] = over ? 0.0 : hi[l];
            live = live & !over;
            sweeps[l] += live ? 1.0 : 0.0;
            lo[l] = live ? hi[l] - 2.0 : -1.0;
            kmax = LANES_MAX(kmax, lo[l]);
        }
        if (kmax < 0.0) break;
        /* The block's top: lo goes up while the entry above it is not negligible. On the way up, the estimate
         * smin of the block's smallest singular value and its largest entry smax. */
        for (int l = 0; l < QW; l++) {
            long h = lo[l] >= 0.0 ? (long)hi[l] - 1 : 0;
            mu[l] = smin[l] = smax[l] = fabs(D[h * QW + l]);
        }
        for (int k = (int)kmax; k >= 0; k--) {
            const double kk = k, *Dk = D + (size_t)k * QW, *Ek = E + (size_t)k * QW, *Ea = Ek - QW;
            for (int l = 0; l < QW; l++) {
                int in = (lo[l] <= kk) & (kk <= hi[l] - 2.0);
                double dk = fabs(Dk[l]), ek = fabs(Ek[l]);
                double next = dk * (mu[l] / (mu[l] + ek)); /* in the block, ek > thr > 0 */
                mu[l] = in ? next : mu[l];
                smin[l] = in ? LANES_MIN(smin[l], next) : smin[l];
                smax[l] = in ? LANES_MAX(smax[l], LANES_MAX(dk, ek)) : smax[l];
                int up = (lo[l] == kk) & (fabs(Ea[l]) > thr[l]);
                lo[l] = up ? kk - 1.0 : lo[l];
            }
        }
        /* Shift (see above). Both branches of dlas2 computed, one kept. */
        for (int l = 0; l < QW; l++) {
            int live = lo[l] >= 0.0;
            long h = live ? (long)hi[l] : 2, b = live ? (long)lo[l] : 0;
            double fa = fabs(D[(h - 2) * QW + l]), ga = fabs(E[(h - 2) * QW + l]), ha = fabs(D[(h - 1) * QW + l]);
            double fhmn = LANES_MIN(fa, ha), fhmx = LANES_MAX(fa, ha);
            double sx = fhmx > 0.0 ? fhmx : 1.0, sg = ga > 0.0 ? ga : 1.0;
            double as = 1.0 + fhmn / sx, at = (fhmx - fhmn) / sx, au = (ga / sx) * (ga / sx);
            double small_g = fhmn * (2.0 / (sqrt(as * as + au) + sqrt(at * at + au)));
            double av = fhmx / sg;
            double cv = 1.0 / (sqrt(1.0 + (as * av) * (as * av)) + sqrt(1.0 + (at * av) * (at * av)));
            double large_g = av == 0.0 ? (fhmn * fhmx) / sg : 2.0 * ((fhmn * cv) * av);
            double shift = fhmn == 0.0 ? 0.0 : (ga < fhmx ? small_g : large_g);
            double dlo = D[b * QW + l], sll = fabs(dlo);
            double ratio = shift / (sll > 0.0 ? sll : 1.0);
            int tiny = smin[l] < sqrt_eps * smax[l], negligible = (sll > 0.0) & (ratio * ratio < eps);
            shift = tiny | negligible ? 0.0 : shift;
            zero[l] = shift == 0.0;
            double safe = sll > 0.0 ? dlo : 1.0; /* sll = 0 makes smin = 0: the zero shift */
            f0[l] = zero[l] != 0.0 ? 1.0 : (sll - shift) * ((dlo >= 0.0 ? 1.0 : -1.0) + shift / safe);
            g0[l] = zero[l] != 0.0 ? 1.0 : E[b * QW + l];
        }
        double kmin = n;
        for (int l = 0; l < QW; l++) /* the union of the blocks (scalar: a short loop) */
            if (lo[l] >= 0.0) kmin = LANES_MIN(kmin, lo[l]);
        int any_zero = 0;
        for (int l = 0; l < QW; l++) any_zero |= (lo[l] >= 0.0) & (zero[l] != 0.0);
        if (any_zero) /* one branch for all lanes: most sweeps of most chunks have no zero-shift lane */
            LANES_NAME(sweep)(D, E, (int)kmin, (int)kmax, lo, hi, zero, f0, g0, f, g, osn, 1);
        else
            LANES_NAME(sweep)(D, E, (int)kmin, (int)kmax, lo, hi, zero, f0, g0, f, g, osn, 0);
    }
    for (int l = 0; l < QW; l++) failed[l] = bad[l] != 0.0;
}

static int LANES_NAME(run)(const char *base, const Py_ssize_t *offsets, Py_ssize_t count, int m, int n,
                           Py_ssize_t rs, Py_ssize_t cs, int max_sweeps, int width, double *out,
                           unsigned char *flags, double *work) {
    /* Matrix b is the m x n matrix with entry (i, j) at base + offsets[b] + i*rs + j*cs (bytes), m >= n >= 1.
     * width: matrices packed side by side (8, or a smaller power of two when count is smaller); work: at least
     * LANES_WORK(m, n, width) doubles. flags[b]: 0, or LANES_UNCONVERGED, or LANES_NOT_FINITE. Returns the
     * number of flagged matrices. */
    double *D = work + (size_t)m * n * width + (size_t)(m + n) * width, *E = D + (size_t)n * QW + QW; /* E[-1] */
    int exps[QW];
    unsigned char unconverged[QW], not_finite[QW];
    int nflagged = 0;
    for (Py_ssize_t b0 = 0; b0 < count; b0 += QW) {
        for (int k = 0; k < n; k++)
            for (int l = 0; l < QW; l++) D[(size_t)k * QW + l] = 0.0;
        for (int k = -1; k <= n; k++)
            for (int l = 0; l < QW; l++) E[(size_t)k * QW + l] = 0.0;
        for (int g0 = 0; g0 < QW && b0 + g0 < count; g0 += width) {
            const Py_ssize_t b = b0 + g0;
            double *Dg = D + g0, *Eg = E + g0;
            if (width == 8)
                LANES_PACK(8)(base, offsets, count, b, m, n, rs, cs, work, Dg, Eg,
                                                      exps + g0, not_finite + g0);
            else if (width == 4)
                LANES_PACK(4)(base, offsets, count, b, m, n, rs, cs, work, Dg, Eg,
                                                      exps + g0, not_finite + g0);
            else if (width == 2)
                LANES_PACK(2)(base, offsets, count, b, m, n, rs, cs, work, Dg, Eg,
                                                      exps + g0, not_finite + g0);
            else
                LANES_PACK(1)(base, offsets, count, b, m, n, rs, cs, work, Dg, Eg,
                                                      exps + g0, not_finite + g0);
        }
        LANES_NAME(bidiagonal_sweeps)(D, E, n, max_sweeps, unconverged);
        for (int l = 0; l < QW && b0 + l < count; l++) {
            double sum = 0.0;
            for (int k = 0; k < n; k++) sum += fabs(D[(size_t)k * QW + l]);
            out[b0 + l] = ldexp(sum, exps[l]);
            flags[b0 + l] = not_finite[l] ? LANES_NOT_FINITE
                            : unconverged[l] || !isfinite(out[b0 + l]) ? LANES_UNCONVERGED : 0;
            nflagged += flags[b0 + l] != 0;
        }
    }
    return nflagged;
}
